//===- Pipeline.cpp - moecomm-pipeline: collective level -> LLVM dialect ---===//

#include "moecomm/Pipelines/Pipeline.h"

#include "Transforms/ConfigureCollectives.h"
#include "Transforms/OptionErrors.h"
#include "Transforms/ScheduleOverlap.h"
#include "Transforms/StrategyCostAnalysis.h"
#include "moecomm/Conversion/Passes.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::moecomm;

void mlir::moecomm::buildMoECommPipeline(OpPassManager &pm,
                                         const PipelineOptions &options) {
  // First: module attributes the translation to LLVM IR would crash on fail
  // here, with an error, before any lowering.
  pm.addPass(createMoECommCheckLLVMModuleAttributes());
  // JAX's ragged all-to-all is converted by its own pass, run before by hand
  // (it takes no pipeline option): say so before any pass trips on it.
  pm.addPass(createMoECommRequireImported());
  MoECommSplitHierarchicalOptions split;
  split.strategy = options.strategy;
  split.ranksPerNode = options.ranksPerNode;
  split.preset = options.preset;
  split.tokensPerRank = options.tokensPerRank;
  split.ranks = options.ranks;
  split.experts = options.experts;
  split.wireDtype = options.wireDtype;
  split.capacity = options.capacity;
  split.align = options.align;
  pm.addPass(createMoECommSplitHierarchical(split));
  pm.addPass(createMoECommFuseQuant());
  pm.addPass(createMoECommFusePermute());
  pm.addPass(createCanonicalizerPass());
  MoECommScheduleOverlapOptions overlap;
  overlap.chunks = options.chunks;
  pm.addNestedPass<func::FuncOp>(createMoECommScheduleOverlap(overlap));
  // The framework-level row moves moecomm-raise-dispatch left (or a graph
  // wrote without a per-expert exchange) become loops on tensors, which
  // bufferize with the rest.
  pm.addPass(createMoECommLowerTokenPermutes());
  // Expert computations written as elementwise arith on tensors bufferize
  // through linalg.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  ConvertMoECommToRuntimeOptions toRuntime;
  toRuntime.deallocate = false;
  pm.addPass(createConvertMoECommToRuntime(toRuntime));
  pm.addPass(createMoECommBufferDeallocation());
  // The upstream deallocation (functions with loops or branches) leaves
  // bufferization.clone / dealloc.
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createCSEPass());
  // Device buffers: every buffer is then the bound device's, its work on
  // the device's stream.
  if (options.target == Target::cuda) {
    pm.addPass(createMoECommDeviceBuffers());
    pm.addPass(createCSEPass());
  }

  // Runtime level -> LLVM dialect. The expert GEMMs first, on the final
  // buffers: OpenBLAS runs them 30 to 500 times faster than the loops
  // (bench/gemm_bench).
  if (options.expertGemm == ExpertGemm::blas)
    pm.addPass(createMoECommMatmulToBlas());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Without rollback bookkeeping: every loop (a chunk output's copy, an
  // expert computation) splits its function's one block, and recording the
  // moved ops for rollback tripled this pass's time at many chunks. SCF-to-CF's
  // patterns never fail, so the output is the same.
  SCFToControlFlowPassOptions scfToCf;
  scfToCf.allowPatternRollback = false;
  pm.addPass(createSCFToControlFlowPass(scfToCf));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // bf16 <-> f32 conversions as integer bit operations: no compiler-rt
  // builtin (__truncsfbf2) needed when the object is linked ahead of time.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  // Math ops without an LLVM intrinsic (erf, an expert's GELU) become libm
  // calls, which the JIT and AOT libraries resolve like those of the
  // intrinsics (expf, tanhf).
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::moecomm::registerMoECommPipeline() {
  // PassPipelineRegistration<PipelineOptions>, with the option parser's
  // errors as one line in the form of the passes' (OptionErrors.h).
  registerPassPipeline(
      "moecomm-pipeline",
      "moecomm: collective-level dispatch/combine -> staged exchanges -> "
      "runtime calls -> LLVM dialect (translate with mlir-translate "
      "--mlir-to-llvmir)",
      [](OpPassManager &pm, StringRef optionsStr,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        // MLIR's option parser skips an option without a name and keeps the
        // last of a repeated one.
        if (std::string problem =
                checkOptionNames("moecomm-pipeline", optionsStr);
            !problem.empty())
          return errorHandler(problem);
        PipelineOptions options;
        std::string message;
        llvm::raw_string_ostream os(message);
        if (failed(options.parseFromString(optionsStr, os))) {
          std::string text = optionParserError("moecomm-pipeline", message);
          return text.empty() ? failure() : errorHandler(text);
        }
        // The values are checked here, under the pipeline's name (the one
        // the user wrote), with the checks of the passes that take them.
        MLIRContext context(MLIRContext::Threading::DISABLED);
        std::string problem;
        ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
          problem = diag.str();
          return success();
        });
        const ::moecomm::LinkPreset *link;
        if (failed(checkConfigureOptions(&context, "moecomm-pipeline",
                                         options.ranks, options.ranksPerNode,
                                         options.experts, options.capacity,
                                         options.align)) ||
            failed(checkCostModelOptions(&context, "moecomm-pipeline",
                                         options.preset, options.tokensPerRank,
                                         link)) ||
            failed(checkOverlapOptions(&context, "moecomm-pipeline",
                                       options.chunks)))
          return errorHandler(problem);
        // The loops would run the expert GEMMs on the host, over device
        // buffers.
        if (options.target == Target::cuda &&
            options.expertGemm == ExpertGemm::loops)
          return errorHandler("moecomm-pipeline: target=cuda needs "
                              "expert-gemm=blas (the device's GEMM); "
                              "expert-gemm=loops runs GEMMs on the host");
        buildMoECommPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(PipelineOptions());
      });
}
