//===- moecomm-opt.cpp - moecomm's mlir-opt ---------------------------------===//
//
// Parses, verifies, transforms and prints IR with the moecomm dialect, its
// passes and pipeline, and the upstream dialects and passes they work with.
// Built on MlirOptMain, so every mlir-opt flag works; the input is read here,
// bounded like the other tools' inputs (1 GiB; an unreadable, too large or
// endless input is one line "moecomm-opt: error: ..." and exit status 2).
//
//===----------------------------------------------------------------------===//

#include "MoECommVersion.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "moecomm/InitAllDialects.h"
#include "moecomm/InitAllPasses.h"
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
