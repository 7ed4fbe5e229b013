//===- AllToAll.h - The counts of the ragged all_to_all ---------*- C++ -*-===//
//
// The ragged all_to_all moves rows by caller-given counts instead of a
// layout (its rows go through Collective.cpp like every collective); these
// are the checks of those counts and moecommAllToAllCounts, which computes
// the receive counts from the send counts.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_ALLTOALL_H
#define MOECOMM_LIB_ALLTOALL_H

#include "Status.h"

#include <cstdint>

namespace moecomm {

class Comm;

/// Local. InvalidArgument unless `counts` holds comm.size() non-negative
/// row counts whose sum fits in int64; `what` names the array.
Status checkCounts(const Comm &comm, const int64_t *counts, const char *what);

/// Collective, after the agreement (nothing has moved yet). Every rank
/// checks every (receiver, sender) pair: recvCounts must be the transpose
/// of the send counts (Mismatch naming the first pair that differs, the
/// same on every rank). Both arrays are checked [W] arrays.
Status checkCountsTranspose(Comm &comm, const int64_t *sendCounts,
                            const int64_t *recvCounts);

/// Collective. recvCounts[s] = rank s's sendCounts[this rank], both [W].
Status allToAllCounts(Comm &comm, const int64_t *sendCounts,
                      int64_t *recvCounts);

} // namespace moecomm

#endif // MOECOMM_LIB_ALLTOALL_H
