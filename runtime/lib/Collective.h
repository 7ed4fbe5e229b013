//===- Collective.h - The one checked path of the collectives ---*- C++ -*-===//
//
// Every collective that moves rows -- dispatch, combine, one exchange stage
// of a layout, the ragged all_to_all -- is described by one CollectiveDesc
// and started by startCollective, whichever entry point asks for it
// (moecomm.h's blocking and Start calls in Api.cpp, the compiled ABI in
// CompiledAbi.cpp). That one path does, in order: check the stream and the
// arguments locally; let a device backend prepare (allocations fail before
// anything moves); agree (Comm::agree: every rank learns whether everyone
// runs the same collective with the same parameters and whether any rank's
// input is bad, and all return the same result); start the operation.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_COLLECTIVE_H
#define MOECOMM_LIB_COLLECTIVE_H

#include "Comm.h"
#include "Operation.h"

#include <cstdint>
#include <memory>

struct moecommLayout;

namespace moecomm {

/// A collective's arguments as the caller gave them (unchecked). Fields a
/// kind does not use are ignored.
struct CollectiveDesc {
  /// OpKind::Dispatch, Combine, Exchange or AllToAll.
  OpKind kind = OpKind::Dispatch;
  /// Dispatch, Combine, Exchange: a layout of the communicator.
  const moecommLayout *layout = nullptr;
  /// Exchange: the layout direction (dispatch or combine) and its stage.
  moecommDirection_t direction = moecommDirectionDispatch;
  int stage = 0;
  /// The rows read: x [T][H] (Dispatch), y [R][H] (Combine), send (Exchange:
  /// the stage's send rows; AllToAll: sum(sendCounts) rows).
  const moecommRows_t *in = nullptr;
  /// The rows written: recv [R][H] (Dispatch), out [T][H] (Combine), recv
  /// (Exchange: the stage's receive rows; AllToAll: sum(recvCounts) rows).
  const moecommRows_t *out = nullptr;
  /// Dispatch: the type rows travel in (x's type or FP8 E4M3).
  moecommDataType_t wireType = moecommFloat32;
  /// Combine: nonzero multiplies each row by its routing weight.
  int weighted = 0;
  /// AllToAll: [W] rows sent to / received from each rank.
  const int64_t *sendCounts = nullptr;
  const int64_t *recvCounts = nullptr;
  /// A device stream on a device backend (NULL: the default stream); must
  /// be NULL on the CPU backends.
  moecommStream_t stream = nullptr;
  CollectiveDesc() = default;
  /// Collective `kind` (of `layout`, unless AllToAll) from `in` into `out`.
  CollectiveDesc(OpKind kind, const moecommLayout *layout,
                 const moecommRows_t *in, const moecommRows_t *out,
                 moecommStream_t stream)
      : kind(kind), layout(layout), in(in), out(out), stream(stream) {}
};

/// Local. Any stream (a cudaStream_t, NULL = the default stream) on a
/// device backend; NULL on the CPU backends (else InvalidArgument, not
/// prefixed with the rank). Also checked by the local staged primitives.
Status checkStream(Comm &comm, moecommStream_t stream);

/// Collective. Checks, agrees on and starts `desc`; `op` is set on success
/// (its finish() completes the collective). Every rank returns the same
/// code: InvalidArgument (a rank's bad argument, message prefixed with that
/// rank), Mismatch (ranks disagree on the collective or a parameter, or the
/// all_to_all counts are not each other's transpose), SystemError /
/// InternalError (a transport or allocation failure). With
/// `deferAgreement` (a start call) a host dispatch, combine or exchange
/// whose local arguments are good returns at once and agrees in flight
/// (AgreedOp.h): then the agreement's error comes from `op`'s finish().
Status startCollective(Comm &comm, const CollectiveDesc &desc,
                       bool deferAgreement, std::unique_ptr<Operation> &op);

/// The C boundary of startCollective (ApiBoundary.h's onComm): the
/// operation is finished at once when `request` is NULL, else handed out as
/// *request (which is NULL after a failure).
moecommResult_t runCollective(moecommComm_t comm, const CollectiveDesc &desc,
                              moecommRequest_t *request);

} // namespace moecomm

#endif // MOECOMM_LIB_COLLECTIVE_H
