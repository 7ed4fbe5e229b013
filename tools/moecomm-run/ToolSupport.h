//===- ToolSupport.h - what moecomm-run and moecomm-bench share -*- C++ -*-===//

#ifndef MOECOMM_TOOLS_RUN_TOOLSUPPORT_H
#define MOECOMM_TOOLS_RUN_TOOLSUPPORT_H

#include "ToolIO.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace moecomm::run {

/// The most ranks the threads backend runs in one process, each rank a
/// thread. Its memory grows faster than W^2 (measured for one token per rank:
/// 0.4 GB at 256 ranks, 2.4 GB at 512, 17.6 GB at 1024), so bigger clusters
/// run under mpirun or, for byte counts only, moecomm-bench --backend count.
constexpr int kMaxThreadRanks = 512;

/// Whether this process prints: not an MPI rank other than 0 (read from the
/// launcher's environment, so it holds before MPI_Init).
bool isReportingProcess();

/// Where data of kind `sub` ("configs", "data") is looked up, in order: the
/// installed <bin>/../share/moecomm/<sub> next to the executable `argv0`,
/// then the source tree's examples/<sub>.
std::vector<std::string> dataDirs(const char *argv0, llvm::StringRef sub);

/// The expert-load trace for trace:... routing: `explicitFile` when given
/// (--trace-file), else examples/data/expert_load_olmoe_mixtral.json from
/// dataDirs(argv0, "data"). invalid_argument when none is found.
llvm::Expected<std::string> findTraceFile(const char *argv0,
                                          llvm::StringRef explicitFile);

/// llvm::cl::ParseCommandLineOptions with every error on one line: llvm::cl
/// writes some errors to its stream and others straight to stderr, so file
/// descriptor 2 is captured while parsing. Returns false with the line (the
/// "<tool>: " prefixes removed) in `error`.
bool parseCommandLine(int argc, char **argv, llvm::StringRef overview,
                      std::string &error);

/// Writes the file `path` with `write` into a new temporary file next to it
/// (next to the file a link names) and renames it over `path`, so that an
/// existing file is replaced whole or not at all; a `path` that exists and
/// is not a regular file (a device, a FIFO), or an existing file in a
/// directory that refuses new files, is written in place. The temporary
/// file is removed on failure.
std::error_code replaceFile(llvm::StringRef path,
                            llvm::function_ref<void(llvm::raw_ostream &)> write);

/// Writes an output file (`path` "-": stdout) with `write` (replaceFile: an
/// existing file is left alone if this fails). Every failure,
/// opening it or writing and closing it (where a full disk shows), is one
/// io_error naming `option` and `path` (exit status 3), never LLVM's fatal
/// error on a stream with an unchecked error.
llvm::Error
writeOutputFile(llvm::StringRef option, llvm::StringRef path,
                llvm::function_ref<void(llvm::raw_ostream &)> write);

/// Checks now that the output file `path` can be written, so that a run does
/// not end in an unwritable path after its work; "-" is stdout. An existing
/// file is opened for appending (never truncated: it stays as it is if the
/// run fails), for a new one a file is created in its directory and
/// removed. io_error as writeOutputFile.
llvm::Error checkOutputFile(llvm::StringRef option, llvm::StringRef path);


/// invalid_argument "--<option>: the path is empty" (the positional one:
/// "the graph's path is empty") for the first path option given with an
/// empty value: an empty path names no file, and is never taken as "not
/// given".
llvm::Error
checkPathsNotEmpty(llvm::ArrayRef<const llvm::cl::opt<std::string> *> options);

/// Reads the input file `path` ("-" and `allowStdin`: stdin) whole, within
/// kMaxInputBytes (readBoundedFile). Every failure is one invalid_argument
/// line "<path>: cannot read <what>: <why>" (exit status 2).
llvm::Expected<std::string>
readInputFile(llvm::StringRef path, llvm::StringRef what,
              bool allowStdin = false);

/// A file a run reads, for checkOutputsSpareInputs; an empty path is an input
/// not given, "-" is stdin.
struct InputFile {
  llvm::StringRef what; ///< e.g. "routing file"
  llvm::StringRef path;
};

/// A file or directory a run writes; an empty path is an output not asked
/// for, "-" is stdout. For a directory output, `writesName` says which file
/// names the run writes into it.
struct OutputPath {
  llvm::StringRef option; ///< e.g. "--json"
  llvm::StringRef path;
  std::function<bool(llvm::StringRef fileName)> writesName = nullptr;
};

/// Checks that no two of the outputs write the same file or both stdout
/// ("-"); an empty path is an output not asked for. A file output that is a
/// file a directory output writes (its parent is that directory and
/// `writesName` accepts its name) counts as the same file. Paths are
/// compared made absolute without "." and "..", and by file identity when
/// both exist (links). invalid_argument naming both options otherwise.
llvm::Error checkDistinctOutputs(llvm::ArrayRef<OutputPath> outputs);

/// invalid_argument (one line naming the option and the input) when an
/// output would replace an input: a file output that is the same file as an
/// input, or a directory output holding, under a name the run writes, a file
/// that is an input. Files are compared by identity (device and inode), so
/// links and other spellings of a path are caught; stdin is compared as the
/// file it is. Outputs that do not exist yet cannot be an input.
llvm::Error checkOutputsSpareInputs(llvm::ArrayRef<InputFile> inputs,
                                    llvm::ArrayRef<OutputPath> outputs);


/// Prints `error` as one line (printErrorLine) when `print`, and returns the
/// exit status it means: 2 for invalid_argument (bad input), 3 for anything
/// else.
int reportError(llvm::StringRef tool, llvm::Error error, bool print);

/// Flushes stdout; a failure (a closed pipe or a full disk) becomes one line
/// on stderr and exit status 3 instead of `status`.
int finishStdout(llvm::StringRef tool, int status);

/// llvm::json::parse for documents from users (routing files, model configs,
/// expert-load traces). Its parser recurses once per nesting level, so a
/// document nested deeper than `maxDepth` arrays/objects is rejected first,
/// with an error in the parser's own "[line:col, byte=N]: message" form,
/// instead of overflowing the stack. Our formats nest at most 4 deep.
llvm::Expected<llvm::json::Value> parseUserJson(llvm::StringRef text,
                                                int maxDepth = 64);

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_TOOLSUPPORT_H
