//===- OutputFiles.h - output files written whole, never over inputs --*- C++
//-*-===//
//
// The rules for the files and directories a tool writes (--json, --dump,
// --csv, ...): checked before the work, written whole or not at all, never
// two outputs onto one file, never an output over an input.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_OUTPUTFILES_H
#define MOECOMM_WORKLOAD_OUTPUTFILES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <system_error>

namespace moecomm::workload {

/// Writes the file `path` with `write` into a new temporary file next to it
/// (next to the file a link names) and renames it over `path`, so that an
/// existing file is replaced whole or not at all; a `path` that exists and
/// is not a regular file (a device, a FIFO), or an existing file in a
/// directory that refuses new files, is written in place. The temporary
/// file is removed on failure.
std::error_code
replaceFile(llvm::StringRef path,
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

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_OUTPUTFILES_H
