//===- DeviceEngine.h - What a device backend adds ------------*- C++ -*-===//
//
// The collective algorithms are the same for every backend: check the
// arguments, agree on them (Comm::agree), then move rows stage by stage as
// the layout's plan says (Collective.cpp, LayoutCreate.cpp, PackUnpack.cpp).
// A device backend (nccl) keeps rows in device memory, so it supplies the
// row movement: those ask the transport for its DeviceEngine (Transport::deviceEngine(), nullptr on the CPU backends) and,
// when there is one, lets it
//  - copy device-resident routing to the host for layout creation (the plan
//    is built on the host exactly as on the CPU backends: "exact" mode),
//  - upload the finished plan's row maps (DeviceLayout),
//  - prepare an operation *before* the agreement (allocating its buffers, so
//    that an allocation failure is a local error every rank learns about
//    before anything moves) and post it after,
//  - run the local pack / unpack primitives.
// This header has no CUDA types: streams are moecommStream_t (cudaStream_t
// on the nccl backend).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_DEVICEENGINE_H
#define MOECOMM_LIB_DEVICEENGINE_H

#include "Operation.h"
#include "Status.h"
#include "moecomm/Runtime/Plan.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <memory>
#include <vector>

struct moecommLayout;

namespace moecomm {

class Comm;

/// Device-side data of a layout (its row maps in device memory); freed with
/// the layout.
class DeviceLayout {
public:
  virtual ~DeviceLayout() = default;
};

/// A device operation: prepared (buffers allocated, pointers checked) before
/// the agreement, posted (enqueued on the streams) after it. finish() makes
/// the caller's stream wait for the results and enqueues the last local step.
class DeviceOperation : public Operation {
public:
  /// Enqueues the operation. A failure is also reported by finish().
  virtual Status post() = 0;
};

/// Host copies of device-resident routing arrays.
struct HostRouting {
  moecommLayoutDesc_t desc{}; ///< the desc with host pointers
  std::vector<uint8_t> idx;   ///< storage of topkIdx when copied
  std::vector<float> weights; ///< storage of topkWeights when copied
  std::vector<int64_t> slots; ///< storage of slotExperts when copied
};

class DeviceEngine {
public:
  virtual ~DeviceEngine() = default;

  /// Local. `desc` with topkIdx / topkWeights / slotExperts copied to the
  /// host when they are device pointers (a host synchronization), so that
  /// the replica choice and the plan work from the physical slot ids on the
  /// host and only the plan is uploaded; host pointers are used
  /// as they are. Nothing is copied when the sizes are not valid (the
  /// layout's validation then reports them).
  virtual Status hostRouting(const moecommLayoutDesc_t &desc,
                             HostRouting &out) = 0;

  /// Local. Uploads the row maps of `plan` (after it is built).
  virtual Status uploadLayout(const RankPlan &plan,
                              std::unique_ptr<DeviceLayout> &out) = 0;

  /// Local, before the agreement. Prepares dispatch (in = x, out = recv,
  /// stageType = the wire type) or combine (in = y, out = out, stageType =
  /// y's type) of `layout` on `stream`. The arguments' shapes and types are
  /// already checked; this checks that the pointers are device memory.
  virtual Status prepareStaged(Comm &comm, const moecommLayout &layout,
                               moecommDirection_t direction,
                               const moecommRows_t &in,
                               const moecommRows_t &out,
                               moecommDataType_t stageType, bool weighted,
                               moecommStream_t stream,
                               std::unique_ptr<DeviceOperation> &op) = 0;

  /// Local, before the agreement. Prepares one ragged exchange of whole rows
  /// (FP8: rows and scales) inside `scope`: send holds sendCounts[m] rows
  /// for each group member m in member order, recv receives recvCounts[m]
  /// rows from each (concatenated by member). Traffic is counted under
  /// `direction`.
  virtual Status prepareExchange(
      Comm &comm, moecommDirection_t direction, moecommScope_t scope,
      const moecommRows_t &send, const std::vector<int64_t> &sendCounts,
      const moecommRows_t &recv, const std::vector<int64_t> &recvCounts,
      moecommStream_t stream, std::unique_ptr<DeviceOperation> &op) = 0;

  /// Local: moecommPack / moecommUnpack on device rows, enqueued on
  /// `stream` (shapes and types already checked).
  virtual Status pack(const moecommLayout &layout, moecommDirection_t direction,
                      int stage, const moecommRows_t &in, bool weighted,
                      const moecommRows_t &out, moecommStream_t stream) = 0;
  virtual Status unpack(const moecommLayout &layout,
                        moecommDirection_t direction, const moecommRows_t &in,
                        bool weighted, const moecommRows_t &out,
                        moecommStream_t stream) = 0;

  /// Local: FP8 quantize (f32/bf16 -> FP8) or dequantize (FP8 -> f32/bf16)
  /// of a whole block of device rows of the same shape, on `stream`.
  virtual Status convertRows(const moecommRows_t &in, const moecommRows_t &out,
                             moecommStream_t stream) = 0;
};

} // namespace moecomm

#endif // MOECOMM_LIB_DEVICEENGINE_H
