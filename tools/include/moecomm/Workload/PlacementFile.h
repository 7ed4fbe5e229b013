//===- PlacementFile.h - expert placement files -----------------*- C++ -*-===//
//
// Reads an expert placement (moecomm/Model/Placement.h) from JSON:
//
//   {"num_logical_experts": E, "slot_experts": [S ints]}
//
// slot_experts is DeepSeek EPLB's `phy2log` of one layer (deepseek-ai/EPLB:
// the logical expert of each physical slot; rank r of W holds slots
// [r*S/W, (r+1)*S/W)). Other keys are ignored, so a file may carry EPLB's
// own outputs next to it.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_PLACEMENTFILE_H
#define MOECOMM_WORKLOAD_PLACEMENTFILE_H

#include "moecomm/Model/Placement.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace moecomm::workload {

/// Reads the placement file `path` (within the tools' input bound; not
/// stdin). Checks the document's shape only: JSON syntax, an object,
/// num_logical_experts an integer, slot_experts an array of integers. Every
/// error is one invalid_argument line naming the file, e.g. "p.json:
/// expected integer at placement.slot_experts[2]" or "p.json: cannot read
/// placement file: No such file or directory".
llvm::Expected<ExpertPlacement> loadPlacementFile(llvm::StringRef path);

/// Checks `placement` (read from `name`) against a routing of `numExperts`
/// logical experts on `ranks` ranks: the same E, then checkPlacement's rules
/// (S >= E, S % W == 0, every slot's expert in range, every expert placed).
/// E.g. "p.json: placement: logical expert 3 has no slot" or "p.json:
/// num_logical_experts is 8, the routing has 16 experts". invalid_argument.
llvm::Error checkPlacedRouting(const ExpertPlacement &placement,
                               llvm::StringRef name, int64_t numExperts,
                               int ranks);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_PLACEMENTFILE_H
