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
#include "moecomm/InitAll.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

/// The most bytes of input read (as moecomm-run, -aot and -bench).
constexpr uint64_t kMaxInputBytes = uint64_t(1) << 30;

/// Writes `text` to stderr with as few write(2) calls as the kernel allows
/// (one for a line), so concurrent writers do not interleave within it.
void writeStderr(llvm::StringRef text) {
  const char *data = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(2, data, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return; // stderr is gone: nowhere left to say so
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
}

/// Prints "moecomm-opt: error: <message>" as one line in one write.
void printErrorLine(llvm::StringRef message) {
  std::string line = ("moecomm-opt: error: " + message).str();
  for (char &c : line)
    if (c == '\n' || c == '\r' || c == '\0')
      c = ' ';
  line.push_back('\n');
  writeStderr(line);
}

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

/// Reads `path` ("-": stdin) whole, at most kMaxInputBytes: regular files
/// larger than that are refused before reading, anything else (pipes,
/// devices) is read in chunks and refused once it passes the limit;
/// directories are refused. On failure prints one line and returns nullptr.
std::unique_ptr<llvm::MemoryBuffer> readBoundedInput(llvm::StringRef path) {
  auto fail = [&](const llvm::Twine &why) {
    printErrorLine(
        llvm::formatv("{0}: cannot read input: {1}", path, why.str()).str());
    return nullptr;
  };
  const bool stdinInput = path == "-";
  int fd = 0;
  if (!stdinInput) {
    // A FIFO without a writer blocks here, as for any reader of a FIFO.
    if (std::error_code ec = llvm::sys::fs::openFileForRead(path, fd))
      return fail(ec.message());
  }
  llvm::scope_exit closeFd([&] {
    if (!stdinInput)
      ::close(fd);
  });
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(fd, status))
    return fail(ec.message());
  if (status.type() == llvm::sys::fs::file_type::directory_file)
    return fail("it is a directory");
  const std::string limit =
      llvm::formatv("{0} GiB", kMaxInputBytes >> 30).str();
  const bool regular = status.type() == llvm::sys::fs::file_type::regular_file;
  if (regular && status.getSize() > kMaxInputBytes)
    return fail(llvm::formatv("{0} bytes, more than the limit of {1}",
                              status.getSize(), limit));
  std::string text;
  if (regular)
    text.reserve(status.getSize());
  static char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail(std::strerror(errno));
    }
    if (n == 0)
      break;
    if (text.size() + static_cast<size_t>(n) > kMaxInputBytes)
      return fail(llvm::formatv("more than the limit of {0}", limit));
    text.append(chunk, static_cast<size_t>(n));
  }
  // The buffer name is the one MlirOptMain's own reader gives (diagnostics
  // and --verify-diagnostics refer to it).
  return std::make_unique<StringBuffer>(
      std::move(text), stdinInput ? std::string("<stdin>") : path.str());
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
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  // Keep the output file only when MlirOptMain succeeded.
  output->keep();
  return 0;
}
