//===- moecomm-opt.cpp - moecomm's mlir-opt ------------------------------===//
//
// Parses, verifies, transforms and prints IR with the moecomm dialect, its
// passes and pipeline, and the upstream dialects and passes they work with.
// Built on MlirOptMain, so every mlir-opt flag works; the input is read here,
// bounded like the other tools' inputs (1 GiB; an unreadable, too large or
// endless input is one line "moecomm-opt: error: ..." and exit status 2).
//
// Unregistered operations: JAX's ragged all-to-all arrives as
// `stablehlo.custom_call @ragged_all_to_all` (generic form), and moecomm has
// no StableHLO dialect; moecomm-import-ragged-all-to-all converts it. So the
// input is parsed with unregistered dialects allowed, and before any pass an
// error rejects every other unregistered operation (and opaque attribute or
// type of an unregistered dialect). --allow-unregistered-dialect keeps
// mlir-opt's meaning: everything is accepted.
//
//===----------------------------------------------------------------------===//

#include "MoECommVersion.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "moecomm/InitAllDialects.h"
#include "moecomm/InitAllPasses.h"
#include "moecomm/Transforms/Passes.h"
#include "moecomm/Workload/ToolIO.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>

namespace {

/// A buffer owning the text read (no second copy of up to 1 GiB).
class StringBuffer : public llvm::MemoryBuffer {
public:
  StringBuffer(std::string text, std::string name)
      : text(std::move(text)), name(std::move(name)) {
    // std::string keeps a NUL after its data, as the parser requires.
    init(this->text.data(), this->text.data() + this->text.size(),
         /*RequiresNullTerminator=*/true);
  }
  llvm::StringRef getBufferIdentifier() const override { return name; }
  BufferKind getBufferKind() const override { return MemoryBuffer_Malloc; }

private:
  std::string text, name;
};

/// Reads `path` ("-": stdin) within the tools' input limit
/// (moecomm::workload::readBoundedFile); on failure prints one line and returns
/// nullptr.
std::unique_ptr<llvm::MemoryBuffer> readBoundedInput(llvm::StringRef path) {
  llvm::Expected<std::string> text =
      moecomm::workload::readBoundedFile(path, /*allowStdin=*/true);
  if (!text) {
    moecomm::workload::printErrorLine(
        "moecomm-opt", llvm::formatv("{0}: cannot read input: {1}", path,
                                     llvm::toString(text.takeError()))
                           .str());
    return nullptr;
  }
  // The buffer name is the one MlirOptMain's own reader gives (diagnostics
  // and --verify-diagnostics refer to it).
  return std::make_unique<StringBuffer>(
      std::move(*text), path == "-" ? std::string("<stdin>") : path.str());
}

/// The error for the first unregistered operation, or opaque attribute or
/// type (of a dialect not registered; in an attribute, property, type or
/// location), other than JAX's ragged all-to-all.
struct OnlyRaggedAllToAllUnregisteredPass
    : public mlir::PassWrapper<OnlyRaggedAllToAllUnregisteredPass,
                               mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(
      OnlyRaggedAllToAllUnregisteredPass)
  llvm::StringRef getArgument() const override {
    return "moecomm-opt-only-ragged-all-to-all-unregistered";
  }
  void runOnOperation() override {
    // One walker for every op: it stops at the first opaque attribute or
    // type.
    auto stop = [](bool opaque) {
      return opaque ? mlir::WalkResult::interrupt()
                    : mlir::WalkResult::advance();
    };
    mlir::AttrTypeWalker walker;
    walker.addWalk([&](mlir::Attribute a) {
      return stop(llvm::isa<mlir::OpaqueAttr>(a));
    });
    walker.addWalk(
        [&](mlir::Type t) { return stop(llvm::isa<mlir::OpaqueType>(t)); });
    auto opaque = [&](mlir::Operation *op) {
      // Locations are attributes too: fused<#foo.bar>[...] holds one.
      if (walker.walk(op->getLoc()).wasInterrupted() ||
          walker.walk(op->getAttrDictionary()).wasInterrupted())
        return true;
      if (mlir::Attribute props = op->getPropertiesAsAttribute())
        if (walker.walk(props).wasInterrupted())
          return true;
      for (mlir::Type t : op->getResultTypes())
        if (walker.walk(t).wasInterrupted())
          return true;
      for (mlir::Region &region : op->getRegions())
        for (mlir::Block &block : region)
          for (mlir::BlockArgument arg : block.getArguments())
            if (walker.walk(arg.getType()).wasInterrupted() ||
                walker.walk(arg.getLoc()).wasInterrupted())
              return true;
      return false;
    };
    mlir::WalkResult result = getOperation()->walk([&](mlir::Operation *op) {
      if (!op->isRegistered() && !mlir::moecomm::isJaxRaggedAllToAll(op)) {
        op->emitError() << "unregistered operation '" << op->getName()
                        << "': moecomm-opt accepts only JAX's "
                           "\"stablehlo.custom_call\" with call_target_name = "
                           "\"ragged_all_to_all\" (see "
                           "--moecomm-import-ragged-all-to-all), or any with "
                           "--allow-unregistered-dialect";
        return mlir::WalkResult::interrupt();
      }
      if (opaque(op)) {
        op->emitError() << "an attribute or type of an unregistered "
                           "dialect: moecomm-opt accepts only JAX's "
                           "ragged all-to-all unregistered, or any with "
                           "--allow-unregistered-dialect";
        return mlir::WalkResult::interrupt();
      }
      return mlir::WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::AddExtraVersionPrinter(moecomm::printMoECommVersion);
  mlir::DialectRegistry registry;
  mlir::moecomm::registerAllDialects(registry);
  mlir::moecomm::registerAllPasses();
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv,
      "moecomm optimizer driver: MoE expert-parallel communication\n",
      registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();

  // Unregistered operations: see the file comment. The pass goes before the
  // pipeline the command line asked for.
  if (!config.shouldAllowUnregisteredDialects()) {
    config.allowUnregisteredDialects(true);
    mlir::MlirOptMainConfig requested = config;
    config.setPassPipelineSetupFn([requested](mlir::PassManager &pm) {
      pm.addPass(std::make_unique<OnlyRaggedAllToAllUnregisteredPass>());
      return requested.setupPassPipeline(pm);
    });
  }

  // --show-dialects and --list-passes read no input: MlirOptMain handles them.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  if (inputFilename == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";
  std::unique_ptr<llvm::MemoryBuffer> input = readBoundedInput(inputFilename);
  if (!input)
    return 2;

  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    moecomm::workload::printErrorLine("moecomm-opt", errorMessage);
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  // Keep the output file only when MlirOptMain succeeded.
  output->keep();
  return 0;
}
