// Lowers a graph with the installed passes: everything registered through
// moecomm/InitAllDialects.h and InitAllPasses.h (MoECommInitAll),
// moecomm-pipeline built with the C++ API (moecomm/Pipelines/Pipeline.h:
// buildMoECommPipeline, MoECommPasses). Prints the lowered functions'
// calls into the runtime; exit status 1 when anything fails.
#include "moecomm/InitAllDialects.h"
#include "moecomm/InitAllPasses.h"
#include "moecomm/Pipelines/Pipeline.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer-pipeline GRAPH.mlir\n");
    return 2;
  }
  mlir::DialectRegistry registry;
  mlir::moecomm::registerAllDialects(registry);
  mlir::moecomm::registerAllPasses();
  if (!mlir::PassPipelineInfo::lookup("moecomm-pipeline")) {
    std::fprintf(stderr, "moecomm-pipeline is not registered\n");
    return 1;
  }

  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  mlir::moecomm::PipelineOptions options;
  options.ranks = 4;
  options.ranksPerNode = 2;
  options.strategy = mlir::moecomm::Strategy::hierarchical;
  mlir::moecomm::buildMoECommPipeline(pm, options);
  if (mlir::failed(pm.run(*module)))
    return 1;

  // Lowered means: only the LLVM dialect is left, calling the runtime.
  bool lowered = true;
  int runtimeCalls = 0;
  module->walk([&](mlir::Operation *op) {
    if (!mlir::isa<mlir::ModuleOp>(op) &&
        !mlir::isa<mlir::LLVM::LLVMDialect>(op->getDialect()))
      lowered = false;
    if (auto call = mlir::dyn_cast<mlir::LLVM::CallOp>(op))
      if (call.getCallee() && call.getCallee()->contains("moecomm_rt_"))
        ++runtimeCalls;
  });
  std::printf("moecomm-pipeline: %s, %d calls into the runtime\n",
              lowered ? "LLVM dialect only" : "NOT LOWERED", runtimeCalls);
  return lowered && runtimeCalls > 0 ? 0 : 1;
}
