//===- RoutingFile.h - the moecomm-routing-v1 format ------------*- C++ -*-===//
//
// Reads and writes `moecomm-routing-v1` documents (DESIGN.md §8,
// docs/moecomm-run.md): a RoutingProblem as JSON, with every input rule
// checked and errors naming the rank, token and slot.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_ROUTINGFILE_H
#define MOECOMM_WORKLOAD_ROUTINGFILE_H

#include "moecomm/Workload/RoutingProblem.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace moecomm::workload {

/// Parses a `moecomm-routing-v1` document (DESIGN.md §8). `name` prefixes
/// messages (usually the file path). Checks the format tag, every field's
/// presence and type, `ranks` == len(topk_idx), each row's length == topk and
/// the weights' shape; id ranges and duplicates are validateRouting()'s job.
/// Errors are llvm::StringError with std::errc::invalid_argument and a
/// one-line message naming the rank, token and slot where they apply;
/// malformed JSON reports its line and column.
llvm::Expected<RoutingProblem> parseRoutingJson(llvm::StringRef text,
                                                llvm::StringRef name);
/// Reads `path` and parses it with parseRoutingJson(). An unreadable file is
/// an invalid_argument error too.
llvm::Expected<RoutingProblem> loadRoutingFile(llvm::StringRef path);

/// The problem as a `moecomm-routing-v1` document (weights always written).
llvm::json::Value routingToJson(const RoutingProblem &problem);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_ROUTINGFILE_H
