//===- DataDir.h - where configs and traces are found -----------*- C++ -*-===//
//
// The shipped data (examples/configs, examples/data) is looked up next to
// the installed executable first, then in the source tree it was built from.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_DATADIR_H
#define MOECOMM_WORKLOAD_DATADIR_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace moecomm::workload {

/// Where data of kind `sub` ("configs", "data") is looked up, in order: the
/// installed <bin>/../share/moecomm/<sub> next to the executable `argv0`,
/// then the source tree's examples/<sub>.
std::vector<std::string> dataDirs(const char *argv0, llvm::StringRef sub);

/// The expert-load trace for trace:... routing: `explicitFile` when given
/// (--trace-file), else examples/data/expert_load_olmoe_mixtral.json from
/// dataDirs(argv0, "data"). invalid_argument when none is found.
llvm::Expected<std::string> findTraceFile(const char *argv0,
                                          llvm::StringRef explicitFile);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_DATADIR_H
