//===- CudaEngine.h - The nccl backend's DeviceEngine -----------*- C++ -*-===//
//
// Runs the exact mode's row movement on the GPU: the layout's plan (built on
// the host by LayoutCreate.cpp, as for the CPU backends) is uploaded as a DevicePlan;
// dispatch / combine are DeviceStagedOps (pack kernel -> NCCL exchange ->
// ... -> unpack kernel, DeviceOps.h); moecommExchange / moecommAllToAll are
// DeviceExchangeOps; moecommPack / moecommUnpack run one kernel on the
// caller's stream.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_CUDAENGINE_H
#define MOECOMM_LIB_CUDA_CUDAENGINE_H

#include "DeviceEngine.h"

namespace moecomm {
namespace cuda {

class NcclTransport;

class CudaEngine final : public DeviceEngine {
public:
  explicit CudaEngine(NcclTransport &transport) : transport_(transport) {}

  Status hostRouting(const moecommLayoutDesc_t &desc,
                     HostRouting &out) override;
  Status uploadLayout(const RankPlan &plan,
                      std::unique_ptr<DeviceLayout> &out) override;
  Status prepareStaged(Comm &comm, const moecommLayout &layout,
                       moecommDirection_t direction, const moecommRows_t &in,
                       const moecommRows_t &out, moecommDataType_t stageType,
                       bool weighted, moecommStream_t stream,
                       std::unique_ptr<DeviceOperation> &op) override;
  Status prepareExchange(Comm &comm, moecommDirection_t direction,
                         moecommScope_t scope, const moecommRows_t &send,
                         const std::vector<int64_t> &sendCounts,
                         const moecommRows_t &recv,
                         const std::vector<int64_t> &recvCounts,
                         moecommStream_t stream,
                         std::unique_ptr<DeviceOperation> &op) override;
  Status pack(const moecommLayout &layout, moecommDirection_t direction,
              int stage, const moecommRows_t &in, bool weighted,
              const moecommRows_t &out, moecommStream_t stream) override;
  Status unpack(const moecommLayout &layout, moecommDirection_t direction,
                const moecommRows_t &in, bool weighted,
                const moecommRows_t &out, moecommStream_t stream) override;
  Status convertRows(const moecommRows_t &in, const moecommRows_t &out,
                     moecommStream_t stream) override;

private:
  NcclTransport &transport_;
};

/// Checks that the data (and FP8 scales) of `rows` are memory of `device`;
/// `what` names the argument.
Status checkDeviceRows(const moecommRows_t &rows, const char *what, int device);

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_CUDAENGINE_H
