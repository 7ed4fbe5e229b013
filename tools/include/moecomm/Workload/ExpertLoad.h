//===- ExpertLoad.h - expert-load traces of real models ---------*- C++ -*-===//
//
// Reads the per-expert token loads of real models
// (examples/data/expert_load_olmoe_mixtral.json: models -> domains ->
// layerN -> one load per expert) that the trace:MODEL:DOMAIN:LAYER
// generator draws from and the runtime tests' skewed routing uses.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_EXPERTLOAD_H
#define MOECOMM_WORKLOAD_EXPERTLOAD_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace moecomm::workload {

/// The per-expert loads of trace `model`/`domain`/`layer` in `traceFile`
/// (its E_t loads, in expert order), relative to the largest (so any finite
/// loads re-bin without overflow). invalid_argument (one line) when the
/// file, model, domain or layer is missing or malformed, a load is not a
/// finite number >= 0, the layer is empty, no load is > 0, or a load > 0
/// vanishes next to the largest.
llvm::Expected<std::vector<double>> readTraceLoads(llvm::StringRef traceFile,
                                                   llvm::StringRef model,
                                                   llvm::StringRef domain,
                                                   int layer);

/// Re-bins E_t = loads.size() >= 1 loads to `numExperts` >= 1 experts: the
/// loads are a histogram on [0, 1) with E_t equal bins; expert e receives the
/// mass of [e/E, (e+1)/E). So E == E_t keeps the loads, E = m*E_t splits each
/// load over m consecutive experts, and E_t = m*E sums m consecutive loads.
std::vector<double> rebinLoads(llvm::ArrayRef<double> loads,
                               int64_t numExperts);

/// readTraceLoads() re-binned to `numExperts` experts (rebinLoads). When
/// `traceExperts` is given it receives E_t. Errors: readTraceLoads's.
llvm::Expected<std::vector<double>>
loadTraceLoads(llvm::StringRef traceFile, llvm::StringRef model,
               llvm::StringRef domain, int layer, int64_t numExperts,
               int64_t *traceExperts = nullptr);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_EXPERTLOAD_H
