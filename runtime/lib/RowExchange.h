//===- RowExchange.h - A ragged exchange of whole rows ---------*- C++ -*-===//
//
// Every exchange of payload rows, on every backend, is built here from row
// counts: the rows of `send` go to the members of a scope group (sendCounts[m]
// rows to member m, in member order), the rows of `recv` come from them
// (recvCounts[m] rows from member m, concatenated by member). FP8 rows travel
// with their scales as a second part of the same exchange. The host
// operations (StagedOp, the single exchanges of Collective.cpp) and the
// device ones (cuda/DeviceOps) build the same Exchange and count the same
// traffic.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_ROWEXCHANGE_H
#define MOECOMM_LIB_ROWEXCHANGE_H

#include "Operation.h"
#include "Transport.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace moecomm {

class Comm;

/// The exchange inside `scope`'s group of send.rows -> recv.rows, whose
/// rows are send.hidden elements of send.type (recv has the same type and
/// hidden size; FP8: a second part moves the [rows][fp8Blocks(hidden)] f32
/// scales). Member m gets sendCounts[m] rows and sends recvCounts[m];
/// offsets and sizes are in bytes. `sendRowIndex` (shared-memory transports
/// only, may be null) makes the send side row-indexed (ExchangePart). The
/// counts come from a checked layout or checked caller counts, so every
/// byte count fits in int64. seq is left 0 and deviceMemory false: the
/// caller sets them.
Exchange rowExchange(moecommScope_t scope, const moecommRows_t &send,
                     const int64_t *sendRowIndex,
                     const std::vector<int64_t> &sendCounts,
                     const moecommRows_t &recv,
                     const std::vector<int64_t> &recvCounts);

/// Counts on `comm` the payload bytes sent to each member of `group`
/// (ranks in member order): sendCounts[m] rows of wireRowBytes(type,
/// hidden), under `direction` and `scope`.
void countRowPayload(Comm &comm, moecommDirection_t direction,
                     moecommScope_t scope, const std::vector<int> &group,
                     const std::vector<int64_t> &sendCounts,
                     moecommDataType_t type, int64_t hidden);

/// Host backends: one exchange of host rows (rowExchange with sequence
/// number `seq`, reserved by its agreement) as a HostOperation: begin()
/// counts its payload and posts it, finish() waits for it; traced (Trace.h)
/// as an all_to_all (direction all_to_all) or as stage `stage`'s exchange,
/// from post to the end of finish(). A posting failure is reported by
/// finish(): every rank has agreed to the exchange, so every rank gets an
/// operation to wait on.
std::unique_ptr<HostOperation>
makeRowExchange(Comm &comm, moecommDirection_t direction, int stage,
                moecommScope_t scope, const moecommRows_t &send,
                const std::vector<int64_t> &sendCounts,
                const moecommRows_t &recv,
                const std::vector<int64_t> &recvCounts, uint64_t seq);

} // namespace moecomm

#endif // MOECOMM_LIB_ROWEXCHANGE_H
