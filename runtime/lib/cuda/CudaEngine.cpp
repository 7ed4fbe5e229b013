//===- CudaEngine.cpp - The nccl backend's DeviceEngine -------------------===//
#include "CudaEngine.h"

#include "CudaCheck.h"
#include "DeviceOps.h"
#include "DevicePlan.h"
#include "LayoutHandle.h"
#include "NcclTransport.h"
#include "RowKernels.h"

namespace moecomm {
namespace cuda {

Status checkDeviceRows(const moecommRows_t &rows, const char *what,
                       int device) {
  if (rows.rows <= 0 || rows.hidden <= 0)
    return Status::success();
  if (Status st = checkDevicePointer(rows.data, what, device); !st.ok())
    return st;
  if (isFp8(rows.type))
    return checkDevicePointer(rows.scales, cat(what, " scales").c_str(),
                              device);
  return Status::success();
}

namespace {

const DevicePlan *devicePlanOf(const moecommLayout &layout) {
  return dynamic_cast<const DevicePlan *>(layout.device.get());
}

Status noDevicePlan() {
  return internalError("the layout has no device plan (it was made on "
                       "another backend?)");
}

/// moecommPack / moecommUnpack on `device`: the layout's device plan, the
/// device made current and `in` / `out` in its memory, then `step(plan)`.
template <typename Step>
Status localStep(const moecommLayout &layout, int device,
                 const moecommRows_t &in, const moecommRows_t &out, Step step) {
  const DevicePlan *dp = devicePlanOf(layout);
  if (!dp)
    return noDevicePlan();
  DeviceGuard guard(device);
  if (!guard.status().ok())
    return guard.status();
  if (Status st = checkDeviceRows(in, "in", device); !st.ok())
    return st;
  if (Status st = checkDeviceRows(out, "out", device); !st.ok())
    return st;
  return step(*dp);
}

} // namespace

Status CudaEngine::hostRouting(const moecommLayoutDesc_t &desc,
                               HostRouting &out) {
  out.desc = desc;
  if (desc.numSlots > 0 && isDevicePointer(desc.slotExperts)) {
    DeviceGuard guard(transport_.device());
    if (!guard.status().ok())
      return guard.status();
    if (desc.numSlots > (int64_t(1) << 40))
      return invalidArgument(cat("num_slots ", desc.numSlots, " is too large"));
    out.slots.resize((size_t)desc.numSlots);
    if (Status st = cudaStatus(cudaMemcpy(out.slots.data(), desc.slotExperts,
                                          (size_t)desc.numSlots * 8,
                                          cudaMemcpyDeviceToHost),
                               "cudaMemcpy of slot_experts to the host");
        !st.ok())
      return st;
    out.desc.slotExperts = out.slots.data();
  }
  if (desc.numTokens <= 0 || desc.topk < 1 ||
      (desc.idxType != moecommInt32 && desc.idxType != moecommInt64))
    return Status::success(); // nothing the validation would read
  DeviceGuard guard(transport_.device());
  if (!guard.status().ok())
    return guard.status();
  if (desc.numTokens > (int64_t(1) << 40) / desc.topk)
    return invalidArgument(cat("num_tokens ", desc.numTokens, " x topk ",
                               desc.topk, " is too large"));
  const int64_t n = desc.numTokens * desc.topk;
  const int64_t idxBytes = n * (desc.idxType == moecommInt32 ? 4 : 8);
  // The copies synchronize the host with the legacy default stream: the
  // routing must be ready there (docs/gpu.md).
  if (isDevicePointer(desc.topkIdx)) {
    out.idx.resize((size_t)idxBytes);
    if (Status st =
            cudaStatus(cudaMemcpy(out.idx.data(), desc.topkIdx,
                                  (size_t)idxBytes, cudaMemcpyDeviceToHost),
                       "cudaMemcpy of topk_idx to the host");
        !st.ok())
      return st;
    out.desc.topkIdx = out.idx.data();
  }
  if (desc.topkWeights && isDevicePointer(desc.topkWeights)) {
    out.weights.resize((size_t)n);
    if (Status st =
            cudaStatus(cudaMemcpy(out.weights.data(), desc.topkWeights,
                                  (size_t)n * 4, cudaMemcpyDeviceToHost),
                       "cudaMemcpy of topk_weights to the host");
        !st.ok())
      return st;
    out.desc.topkWeights = out.weights.data();
  }
  return Status::success();
}

Status CudaEngine::uploadLayout(const RankPlan &plan,
                                std::unique_ptr<DeviceLayout> &out) {
  DeviceGuard guard(transport_.device());
  if (!guard.status().ok())
    return guard.status();
  std::unique_ptr<DevicePlan> dp;
  if (Status st = DevicePlan::upload(plan, dp); !st.ok())
    return st;
  out = std::move(dp);
  return Status::success();
}

Status CudaEngine::prepareStaged(Comm &comm, const moecommLayout &layout,
                                 moecommDirection_t direction,
                                 const moecommRows_t &in,
                                 const moecommRows_t &out,
                                 moecommDataType_t stageType, bool weighted,
                                 moecommStream_t stream,
                                 std::unique_ptr<DeviceOperation> &op) {
  const DevicePlan *dp = devicePlanOf(layout);
  if (!dp)
    return noDevicePlan();
  auto o = std::make_unique<DeviceStagedOp>(
      comm, transport_, *dp, layout.plan, direction, in, out, stageType,
      weighted, static_cast<cudaStream_t>(stream));
  if (Status st = o->prepare(); !st.ok())
    return st;
  op = std::move(o);
  return Status::success();
}

Status CudaEngine::prepareExchange(
    Comm &comm, moecommDirection_t direction, moecommScope_t scope,
    const moecommRows_t &send, const std::vector<int64_t> &sendCounts,
    const moecommRows_t &recv, const std::vector<int64_t> &recvCounts,
    moecommStream_t stream, std::unique_ptr<DeviceOperation> &op) {
  auto o = std::make_unique<DeviceExchangeOp>(
      comm, transport_, direction, scope, send, sendCounts, recv, recvCounts,
      static_cast<cudaStream_t>(stream));
  if (Status st = o->prepare(); !st.ok())
    return st;
  op = std::move(o);
  return Status::success();
}

Status CudaEngine::pack(const moecommLayout &layout,
                        moecommDirection_t direction, int stage,
                        const moecommRows_t &in, bool weighted,
                        const moecommRows_t &out, moecommStream_t stream) {
  return localStep(
      layout, transport_.device(), in, out, [&](const DevicePlan &dp) {
        const DeviceDirection &d = dp.direction(direction);
        if (stage < 0 || stage >= (int)d.packs.size())
          return internalError("the device plan has no such stage");
        return DeviceStagedOp::packStage(d.packs[stage], direction, weighted,
                                         out.type, in, out,
                                         static_cast<cudaStream_t>(stream));
      });
}

Status CudaEngine::unpack(const moecommLayout &layout,
                          moecommDirection_t direction, const moecommRows_t &in,
                          bool weighted, const moecommRows_t &out,
                          moecommStream_t stream) {
  return localStep(
      layout, transport_.device(), in, out, [&](const DevicePlan &dp) {
        return DeviceStagedOp::unpackStage(dp.direction(direction).unpack,
                                           direction, weighted, in, out,
                                           static_cast<cudaStream_t>(stream));
      });
}

Status CudaEngine::convertRows(const moecommRows_t &in,
                               const moecommRows_t &out,
                               moecommStream_t stream) {
  const bool quantize = isFloatData(in.type) && isFp8(out.type);
  const bool dequantize = isFp8(in.type) && isFloatData(out.type);
  if (!quantize && !dequantize)
    return invalidArgument("FP8 conversion needs f32 or bf16 rows on one side "
                           "and FP8 rows on the other");
  if (in.rows != out.rows || in.hidden != out.hidden || in.rows < 0 ||
      in.hidden < 0)
    return invalidArgument(cat("in is ", in.rows, "x", in.hidden, ", out is ",
                               out.rows, "x", out.hidden,
                               ": shapes must be equal"));
  if (in.rows > 0 && in.hidden > 0 &&
      (!in.data || !out.data || !(quantize ? out.scales : in.scales)))
    return invalidArgument("in and out need data (and FP8 scales)");
  DeviceGuard guard(transport_.device());
  if (!guard.status().ok())
    return guard.status();
  if (Status st = checkDeviceRows(in, "in", transport_.device()); !st.ok())
    return st;
  if (Status st = checkDeviceRows(out, "out", transport_.device()); !st.ok())
    return st;
  return gatherRowsDevice(in, out, GatherIndex{},
                          static_cast<cudaStream_t>(stream));
}

} // namespace cuda
} // namespace moecomm
