//===- Ops.h - Layouts and the collective operations ------------*- C++ -*-===//
//
// The collective algorithms on top of Comm and the plans: layout creation,
// dispatch / combine as compositions of pack -> exchange -> unpack, the raw
// ragged all_to_all, and the start/wait request objects.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_OPS_H
#define MOECOMM_LIB_OPS_H

#include "Comm.h"
#include "DeviceEngine.h"
#include "Operation.h"
#include "moecomm/Runtime/Plan.h"

#include <memory>

/// The C handle of a layout: the plan of this rank plus its identity.
struct moecommLayout {
  moecomm::Comm *comm = nullptr;
  uint64_t commUid = 0; ///< Comm::uid() of its communicator
  int64_t id = 0;       ///< the same on every rank (creation order)
  moecomm::RankPlan plan;
  moecommLayoutInfo_t info{};
  /// The plan's row maps in device memory (device backends only).
  std::unique_ptr<moecomm::DeviceLayout> device;
};

/// The C handle of a request.
struct moecommRequest {
  moecomm::Comm *comm = nullptr;
  std::unique_ptr<moecomm::Operation> op;
  bool done = false;
  moecomm::Status status;
};

namespace moecomm {

/// Collective. Validates, agrees, computes drops, exchanges the routing
/// records along the stages and builds this rank's plan.
Status createLayout(Comm &comm, const moecommLayoutDesc_t *desc,
                    std::unique_ptr<moecommLayout> &layout);

/// Collective. Agrees on the arguments and starts a dispatch (x -> recv) or
/// a combine (y -> out). `op` is set on success. `stream` is the caller's
/// stream on a device backend (NULL on the CPU backends).
Status startDispatch(Comm &comm, const moecommLayout *layout,
                     const moecommRows_t *x, moecommDataType_t wireType,
                     const moecommRows_t *recv, moecommStream_t stream,
                     std::unique_ptr<Operation> &op);
Status startCombine(Comm &comm, const moecommLayout *layout,
                    const moecommRows_t *y, int weighted,
                    const moecommRows_t *out, moecommStream_t stream,
                    std::unique_ptr<Operation> &op);
/// Collective. The ragged all_to_all; counts are checked collectively first.
Status startAllToAll(Comm &comm, const moecommRows_t *send,
                     const int64_t *sendCounts, const moecommRows_t *recv,
                     const int64_t *recvCounts, moecommStream_t stream,
                     std::unique_ptr<Operation> &op);
/// Collective. One exchange stage of a layout.
Status startExchange(Comm &comm, const moecommLayout *layout,
                     moecommDirection_t direction, int stage,
                     const moecommRows_t *send, const moecommRows_t *recv,
                     moecommStream_t stream, std::unique_ptr<Operation> &op);
/// Collective. recvCounts[s] = rank s's sendCounts[this rank].
Status allToAllCounts(Comm &comm, const int64_t *sendCounts,
                      int64_t *recvCounts);

/// Local staged primitives (device rows on `stream` on a device backend).
Status packRows(Comm &comm, const moecommLayout *layout,
                moecommDirection_t direction, int stage,
                const moecommRows_t *in, int weighted,
                const moecommRows_t *out, moecommStream_t stream);
Status unpackRows(Comm &comm, const moecommLayout *layout,
                  moecommDirection_t direction, const moecommRows_t *in,
                  int weighted, const moecommRows_t *out,
                  moecommStream_t stream);

/// Local FP8 conversions of whole row blocks (same shape).
Status quantizeRows(const moecommRows_t *in, const moecommRows_t *out);
Status dequantizeRows(const moecommRows_t *in, const moecommRows_t *out);

/// Completes `request` (and, first, every request of its communicator
/// started before it) and frees it.
Status waitRequest(moecommRequest *request);

} // namespace moecomm

#endif // MOECOMM_LIB_OPS_H
