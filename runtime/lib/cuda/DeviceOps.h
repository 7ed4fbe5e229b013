//===- DeviceOps.h - Dispatch, combine and exchanges on the GPU -*- C++ -*-===//
//
// The exact mode's collective operations on device rows. A staged op is the
// CPU StagedOp (StagedOp.cpp) with buffers in device memory and work in
// streams:
//
//   post():   pack stage 0 on the caller's stream U       (kernel)
//             the communication stream C waits for U      (event)
//             for s in stages: exchange s on C            (NCCL group)
//                              pack s+1 on C               (kernel)
//             record `done` on C
//   finish(): U waits for `done`; unpack on U (kernel); scratch freed on U
//
// Neither blocks the host. Stage buffers come from the stream-ordered
// allocator and are allocated in prepare(), before the agreement, so an
// out-of-memory rank fails the collective on every rank before anything
// moves. The arithmetic is the CPU's (same maps, same order), so results are
// bit-identical to the CPU backends.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_DEVICEOPS_H
#define MOECOMM_LIB_CUDA_DEVICEOPS_H

#include "DeviceBuffer.h"
#include "DeviceEngine.h"
#include "DevicePlan.h"
#include "Transport.h"

#include <vector>

namespace moecomm {
class Comm;
namespace cuda {

class NcclTransport;

/// A block of device rows with its own stream-ordered memory.
struct DeviceRowBuffer {
  StreamBuffer memory;
  moecommRows_t rows{};
  /// `n` rows of `hidden` elements of `type` (FP8: plus scales) on `stream`
  /// from `pool` (nullptr: the default pool).
  Status allocate(int64_t n, int64_t hidden, moecommDataType_t type,
                  cudaStream_t stream, const char *what,
                  cudaMemPool_t pool = nullptr);
};

/// dispatch (x -> recv) or combine (y -> out) of a layout.
class DeviceStagedOp final : public DeviceOperation {
public:
  DeviceStagedOp(Comm &comm, NcclTransport &transport, const DevicePlan &plan,
                 const RankPlan &hostPlan, moecommDirection_t direction,
                 const moecommRows_t &in, const moecommRows_t &out,
                 moecommDataType_t stageType, bool weighted,
                 cudaStream_t stream);
  ~DeviceStagedOp() override;

  /// Checks the pointers, allocates the stage buffers and the event.
  Status prepare();
  Status post() override;
  Status finish() override;

  /// Stage s's pack: the stage's input rows `in` -> its send rows `out`.
  static Status packStage(const DeviceMap &map, moecommDirection_t direction,
                          bool weighted, moecommDataType_t stageType,
                          const moecommRows_t &in, const moecommRows_t &out,
                          cudaStream_t stream);
  /// The unpack: the last stage's received rows `in` -> the caller's `out`
  /// (dispatch: a gather; combine: an f32 reduction).
  static Status unpackStage(const DeviceMap &map, moecommDirection_t direction,
                            bool weighted, const moecommRows_t &in,
                            const moecommRows_t &out, cudaStream_t stream);

private:
  Status unpack(const moecommRows_t &in);
  Status postStage(size_t s);
  void releaseAll(bool sync);

  Comm &comm_;
  NcclTransport &transport_;
  const DeviceDirection &plan_;
  const DirectionPlan &hostPlan_;
  moecommDirection_t dir_;
  moecommRows_t in_, out_;
  moecommDataType_t stageType_;
  bool weighted_;
  cudaStream_t stream_;
  std::vector<DeviceRowBuffer> send_, recv_;
  DeviceRowBuffer quantized_; ///< W == 1 with FP8 on the wire
  cudaEvent_t done_ = nullptr;
  bool posted_ = false;
  Status err_;
};

/// One ragged exchange of device rows (moecommExchange, moecommAllToAll).
class DeviceExchangeOp final : public DeviceOperation {
public:
  DeviceExchangeOp(Comm &comm, NcclTransport &transport,
                   moecommDirection_t direction, moecommScope_t scope,
                   const moecommRows_t &send, std::vector<int64_t> sendCounts,
                   const moecommRows_t &recv, std::vector<int64_t> recvCounts,
                   cudaStream_t stream);
  ~DeviceExchangeOp() override;

  Status prepare();
  Status post() override;
  Status finish() override;

private:
  Comm &comm_;
  NcclTransport &transport_;
  moecommDirection_t dir_;
  moecommScope_t scope_;
  moecommRows_t send_, recv_;
  std::vector<int64_t> sendCounts_, recvCounts_;
  cudaStream_t stream_;
  cudaEvent_t done_ = nullptr;
  bool posted_ = false;
  Status err_;
};

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_DEVICEOPS_H
