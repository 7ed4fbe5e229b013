//===- ToolIO.h - bounded input and one-line errors -------------*- C++ -*-===//
//
// The I/O rules every moecomm tool keeps (moecomm-run, moecomm-bench,
// moecomm-opt): inputs are read up to a limit, documents from users are
// parsed within a nesting limit, a line on stderr is one write(2), errors
// are one line and their class is the exit status (2 bad input, 3
// anything else). Library moecomm_tool_io: LLVM Support only, so
// moecomm-opt links it without the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_TOOLIO_H
#define MOECOMM_WORKLOAD_TOOLIO_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

namespace moecomm::workload {

/// The largest input file the tools read (routing files, graphs, model
/// configs, expert-load traces, moecomm-opt's IR): 1 GiB. Far above any real
/// input (a routing of 1024 ranks x 4096 tokens x top-8 is about 0.3 GiB), it
/// keeps an endless or enormous input (/dev/zero, a runaway pipe) from
/// exhausting memory.
constexpr uint64_t kMaxInputBytes = uint64_t(1) << 30;

/// Reads `path` ("-" and `allowStdin`: stdin) whole. Regular files larger
/// than kMaxInputBytes are refused before reading; pipes, FIFOs and devices
/// are read until end of file or until they exceed kMaxInputBytes;
/// directories are refused. The error (invalid_argument) says why only,
/// e.g. "it is a directory": callers put the path and what it is in front.
llvm::Expected<std::string> readBoundedFile(llvm::StringRef path,
                                            bool allowStdin);

/// Writes `text` to stderr (file descriptor 2) with a single write(2), so
/// that it cannot be interleaved with what other processes write to the same
/// stream (mpirun's ranks and mpirun's own messages); only a write the kernel
/// cuts short is continued with another. Every line the tools print on
/// stderr goes through here: llvm::errs() is unbuffered and writes each
/// `<<` separately.
void writeStderr(llvm::StringRef text);

/// Prints "<tool>: error: <message>" as one line (newlines folded to spaces,
/// other control characters such as NUL escaped as \xNN) with
/// writeStderr.
void printErrorLine(llvm::StringRef tool, llvm::StringRef message);

/// Builds an invalid_argument llvm::StringError (exit status 2).
llvm::Error inputError(const llvm::Twine &message);
/// Builds an io_error llvm::StringError (exit status 3: not the input's fault).
llvm::Error systemError(const llvm::Twine &message);

/// Reads the input file `path` ("-" and `allowStdin`: stdin) whole, within
/// kMaxInputBytes (readBoundedFile). Every failure is one invalid_argument
/// line "<path>: cannot read <what>: <why>" (exit status 2).
llvm::Expected<std::string> readInputFile(llvm::StringRef path,
                                          llvm::StringRef what,
                                          bool allowStdin = false);

/// Prints `error` as one line (printErrorLine) when `print`, and returns the
/// exit status it means: 2 for invalid_argument (bad input), 3 for anything
/// else.
int reportError(llvm::StringRef tool, llvm::Error error, bool print);

/// Flushes stdout; a failure (a closed pipe or a full disk) becomes one line
/// on stderr and exit status 3 instead of `status`.
int finishStdout(llvm::StringRef tool, int status);

/// llvm::cl::ParseCommandLineOptions with every error on one line: llvm::cl
/// writes some errors to its stream and others straight to stderr, so file
/// descriptor 2 is captured while parsing. Returns false with the line (the
/// "<tool>: " prefixes removed) in `error`.
bool parseCommandLine(int argc, char **argv, llvm::StringRef overview,
                      std::string &error);

/// llvm::json::parse for documents from users (routing files, model configs,
/// expert-load traces). Its parser recurses once per nesting level, so a
/// document nested deeper than `maxDepth` arrays/objects is rejected first,
/// with an error in the parser's own "[line:col, byte=N]: message" form,
/// instead of overflowing the stack. Our formats nest at most 4 deep.
llvm::Expected<llvm::json::Value> parseUserJson(llvm::StringRef text,
                                                int maxDepth = 64);

/// Reads the JSON document `path` (a routing file, model config or
/// expert-load trace: `what` names it) with readInputFile and parses it with
/// parseUserJson. Errors are invalid_argument lines: readInputFile's, or
/// "<path>: malformed JSON at [line:col, byte=N]: <message>".
llvm::Expected<llvm::json::Value> readUserJsonFile(llvm::StringRef path,
                                                   llvm::StringRef what);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_TOOLIO_H
