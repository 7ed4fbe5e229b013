//===- ToolIO.h - bounded input and one-write error lines -------*- C++ -*-===//
//
// The I/O rules every moecomm tool keeps (moecomm-run, moecomm-bench,
// moecomm-opt): inputs are read up to a limit, and a line on stderr is one
// write(2). Library moecomm_tool_io: LLVM Support only, so moecomm-opt links
// it without the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_RUN_TOOLIO_H
#define MOECOMM_RUN_TOOLIO_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace moecomm {
namespace run {

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

} // namespace run
} // namespace moecomm

#endif // MOECOMM_RUN_TOOLIO_H
