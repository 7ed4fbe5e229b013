//===- CapacityPlan.cpp - Creating capacity-mode plans --------------------===//
//
// moecommCapacityPlanCreate: check and agree on the sizes, learn every
// rank's T, choose P, and allocate every array of the plan once (one
// allocation, zeroed), so that dispatch and combine (Capacity.cpp) never
// allocate.
//
//===----------------------------------------------------------------------===//
#include "Capacity.h"

#include "Comm.h"
#include "CudaEngine.h"
#include "Fp8.h"
#include "Layout.h"
#include "NcclBackend.h"
#include "NcclTransport.h"
#include "RowKernels.h"
#include "moecomm/Model/Sizes.h"

#include <algorithm>
#include <climits>

namespace moecomm {

namespace {

using cuda::cudaStatus;

Status checkDesc(const moecommCapacityDesc_t &d, int W, int me) {
  auto bad = [&](const std::string &m) {
    return invalidArgument(cat("rank ", me, ": ", m));
  };
  if (d.numTokens < 0)
    return bad(cat("num_tokens must be >= 0, got ", d.numTokens));
  if (d.topk < 1)
    return bad(cat("topk must be >= 1, got ", d.topk));
  if (d.numExperts < 1)
    return bad(cat("num_experts must be >= 1, got ", d.numExperts));
  if (d.numExperts % W != 0)
    return invalidArgument(cat("num_experts ", d.numExperts,
                               " is not divisible by ", W, " ranks"));
  if (d.capacity < 1 || d.capacity > INT_MAX)
    return bad(cat("capacity must be in [1, 2^31), got ", d.capacity));
  if (d.pairCapacity < 0)
    return bad(cat("pair capacity must be >= 0, got ", d.pairCapacity));
  if (d.hidden < 1)
    return bad(cat("hidden must be >= 1, got ", d.hidden));
  if (!blockFits(1, d.hidden)) // before its rows' bytes and scale count
    return bad(cat("hidden ", d.hidden,
                   " is more bytes per row than memory holds"));
  if (d.idxType != moecommInt32 && d.idxType != moecommInt64)
    return bad(
        cat("topk_idx must be int32 or int64, got type ", (int)d.idxType));
  if (!isFloatData(d.dataType))
    return bad(
        cat("the data type must be f32 or bf16, got type ", (int)d.dataType));
  if (d.wireType != d.dataType && !isFp8(d.wireType))
    return bad(cat("wire type ", (int)d.wireType,
                   " is neither the data type nor FP8"));
  return Status::success();
}

/// Offsets of the plan's arrays in one allocation.
class Arena {
public:
  /// Offset of a new array of `bytes` (>= 0); empty arrays get their own
  /// address too, so no two arrays ever alias.
  int64_t take(int64_t bytes) {
    int64_t at = size_;
    size_ = (size_ + std::max<int64_t>(bytes, 1) + 255) / 256 * 256;
    return at;
  }
  int64_t size() const { return size_; }

private:
  int64_t size_ = 0;
};

/// Sizes every array, allocates and points the plan at them.
Status allocatePlan(moecommCapacityPlan &p) {
  const int64_t W = p.W, T = p.T, K = p.K, P = p.P, C = p.C, L = p.L;
  const int64_t N = W / p.G, WP = W * P;
  const moecommDataType_t wire = p.desc.wireType, data = p.desc.dataType;
  size_t layoutTemp = 0, sortTemp = 0;
  if (Status st = cuda::routingLayoutTempBytes(T, (int)K, p.E, p.W, layoutTemp);
      !st.ok())
    return st;
  if (Status st = cuda::sortReceivedSlotsTempBytes(WP, p.keyBits, sortTemp);
      !st.ok())
    return st;
  p.tempBytes = std::max(layoutTemp, sortTemp);
  const int64_t wireRow = p.H * elementSize(wire);
  const int64_t dataRow = p.H * elementSize(data);
  const bool fp8 = isFp8(wire);
  const int64_t scaleRow = fp8ScaleRowBytes(wire, p.H); // 0: not FP8
  Arena a;
  const int64_t oClean = a.take(T * K * 4), oWeights = a.take(T * K * 4),
                oCounts = a.take((W * T + 1) * 4),
                oOffsets = a.take((W * T + 1) * 4), oExperts = a.take(p.E * 4),
                oRankTok = a.take(W * 8), oNodeTok = a.take(N * 8),
                oPairPos = a.take(T * K * 8), oSlotPos = a.take(T * K * 8),
                oSendSrc = a.take(WP * 8), oSendCount = a.take(W * 8),
                oSendMeta = a.take(WP * 16), oSendRows = a.take(WP * wireRow),
                oSendScales = a.take(WP * scaleRow),
                oRecvCount = a.take(W * 8), oKept = a.take(W * 8),
                oRecvMeta = a.take(WP * 16), oRecvRows = a.take(WP * wireRow),
                oRecvScales = a.take(WP * scaleRow),
                oKeysIn = a.take(WP * 4), oKeysOut = a.take(WP * 4),
                oValsIn = a.take(WP * 4), oValsOut = a.take(WP * 4),
                oRecvIndex = a.take(C * 8), oInverse = a.take(WP * 8),
                oR = a.take(8), oDropped = a.take(8), oFlags = a.take(4),
                oTpe = a.take(L * 8), oRecvW = a.take(C * 4),
                oRecvSrc = a.take(C * 16), oCombSend = a.take(WP * dataRow),
                oCombRecv = a.take(WP * dataRow), oKeptBack = a.take(W * 8),
                oCombSrc = a.take(T * K * 8), oCombOff = a.take((T + 1) * 8),
                oTemp = a.take((int64_t)p.tempBytes);
  if (Status st = p.memory.allocate(a.size(), "a capacity plan"); !st.ok())
    return st;
  uint8_t *b = p.memory.as<uint8_t>();
  auto at = [b](int64_t off) { return static_cast<void *>(b + off); };
  p.cleanIdx = static_cast<int32_t *>(at(oClean));
  p.weights = static_cast<float *>(at(oWeights));
  p.tokenRankCounts = static_cast<int32_t *>(at(oCounts));
  p.tokenRankOffsets = static_cast<int32_t *>(at(oOffsets));
  p.expertCounts = static_cast<int32_t *>(at(oExperts));
  p.rankTokens = static_cast<int64_t *>(at(oRankTok));
  p.nodeTokens = static_cast<int64_t *>(at(oNodeTok));
  p.pairPos = static_cast<int64_t *>(at(oPairPos));
  p.slotPos = static_cast<int64_t *>(at(oSlotPos));
  p.sendSrc = static_cast<int64_t *>(at(oSendSrc));
  p.sendCount = static_cast<int64_t *>(at(oSendCount));
  p.sendMeta = static_cast<cuda::CapacityMeta *>(at(oSendMeta));
  p.sendRows = {at(oSendRows), fp8 ? at(oSendScales) : nullptr, WP, p.H, wire};
  p.recvCount = static_cast<int64_t *>(at(oRecvCount));
  p.kept = static_cast<int64_t *>(at(oKept));
  p.recvMeta = static_cast<cuda::CapacityMeta *>(at(oRecvMeta));
  p.recvSlots = {at(oRecvRows), fp8 ? at(oRecvScales) : nullptr, WP, p.H,
                 wire};
  p.keysIn = static_cast<uint32_t *>(at(oKeysIn));
  p.keysOut = static_cast<uint32_t *>(at(oKeysOut));
  p.valuesIn = static_cast<int32_t *>(at(oValsIn));
  p.valuesOut = static_cast<int32_t *>(at(oValsOut));
  p.recvIndex = static_cast<int64_t *>(at(oRecvIndex));
  p.inverse = static_cast<int64_t *>(at(oInverse));
  p.recvRows = static_cast<int64_t *>(at(oR));
  p.dropped = static_cast<int64_t *>(at(oDropped));
  p.flags = static_cast<int32_t *>(at(oFlags));
  p.tokensPerExpert = static_cast<int64_t *>(at(oTpe));
  p.recvWeights = static_cast<float *>(at(oRecvW));
  p.recvSources = static_cast<int64_t *>(at(oRecvSrc));
  p.combSend = {at(oCombSend), nullptr, WP, p.H, data};
  p.combRecv = {at(oCombRecv), nullptr, WP, p.H, data};
  p.keptBack = static_cast<int64_t *>(at(oKeptBack));
  p.combSrc = static_cast<int64_t *>(at(oCombSrc));
  p.combOffsets = static_cast<int64_t *>(at(oCombOff));
  p.temp = at(oTemp);
  // Combine's CSR offsets (K terms per token) and zeroed outputs, so that
  // reading them before the first dispatch gives zeros.
  std::vector<int64_t> offsets(T + 1);
  for (int64_t t = 0; t <= T; ++t)
    offsets[t] = t * K;
  if (Status st = cudaStatus(cudaMemset(p.memory.data(), 0, a.size()),
                             "cudaMemset of a capacity plan");
      !st.ok())
    return st;
  return cudaStatus(cudaMemcpy(p.combOffsets, offsets.data(), (T + 1) * 8,
                               cudaMemcpyHostToDevice),
                    "cudaMemcpy of a capacity plan's offsets");
}

const char *const kCreateFields[] = {
    "topk",   "num_experts",    "capacity",      "pair capacity",
    "hidden", "the index type", "the data type", "the wire type"};
} // namespace

Status capacityPlanCreate(Comm &comm, const moecommCapacityDesc_t *desc,
                          moecommCapacityPlan *&out) {
  out = nullptr;
  const int W = comm.size(), me = comm.rank();
  auto *transport = dynamic_cast<cuda::NcclTransport *>(&comm.transport());
  Status local;
  if (!transport)
    local = invalidArgument(cat("rank ", me,
                                ": capacity plans need a communicator of "
                                "backend nccl"));
  else if (!desc)
    local = invalidArgument(cat("rank ", me, ": the capacity desc is NULL"));
  else
    local = checkDesc(*desc, W, me);
  Signature sig(OpKind::CapacityCreate);
  sig.setError(local);
  sig.add(desc ? desc->topk : 0);
  sig.add(desc ? desc->numExperts : 0);
  sig.add(desc ? desc->capacity : 0);
  sig.add(desc ? desc->pairCapacity : 0);
  sig.add(desc ? desc->hidden : 0);
  sig.add(desc ? (int64_t)desc->idxType : -1);
  sig.add(desc ? (int64_t)desc->dataType : -1);
  sig.add(desc ? (int64_t)desc->wireType : -1);
  if (Status st = comm.agree(sig, kCreateFields); !st.ok())
    return st;
  std::vector<int64_t> tokens(W);
  if (Status st = comm.allGather(&desc->numTokens, 8, tokens.data()); !st.ok())
    return st;
  const int64_t maxT = *std::max_element(tokens.begin(), tokens.end());

  auto plan = std::make_unique<moecommCapacityPlan>();
  moecommCapacityPlan &p = *plan;
  p.comm = &comm;
  p.transport = transport;
  p.desc = *desc;
  p.W = W;
  p.G = comm.ranksPerNode();
  p.rank = me;
  p.T = desc->numTokens;
  p.K = desc->topk;
  p.E = desc->numExperts;
  p.L = p.E / W;
  p.C = desc->capacity;
  p.H = desc->hidden;
  // The default P: a source sends a destination at most min(K, L) pairs
  // per token and the destination keeps at most C, so with this P no
  // source-side drop ever happens that the capacity rule would not make.
  const double safe = (double)maxT * (double)std::min(p.K, p.L);
  p.P = desc->pairCapacity > 0 ? desc->pairCapacity
                               : (int64_t)std::min<double>((double)p.C, safe);
  p.desc.pairCapacity = p.P;
  while (p.keyBits < 31 && (int64_t(1) << p.keyBits) <= p.L)
    ++p.keyBits;

  Status built = cuda::checkRoutingLayoutSizes(p.T, (int)p.K, p.E, W);
  const double bytes = (double)W * (double)p.P * (double)p.H * 4.0 * 4.0 +
                       (double)W * (double)p.T * 16.0;
  if (built.ok() && ((double)W * (double)p.P > (double)INT_MAX ||
                     bytes > (double)(int64_t(1) << 50)))
    built = invalidArgument(
        cat("W*P = ", W, "*", p.P, " is too large for a capacity plan"));
  built = onRank(me, built);
  if (built.ok()) {
    cuda::DeviceGuard guard(transport->device());
    built = guard.status();
    if (built.ok())
      built = onRank(me, allocatePlan(p));
  }
  Signature fin(OpKind::CapacityCreate);
  fin.setError(built);
  if (Status st = comm.agree(fin, kCreateFields); !st.ok())
    return st;
  p.id = comm.nextLayoutId();
  out = plan.release();
  return Status::success();
}

Status capacityPlanDestroy(moecommCapacityPlan *plan) {
  if (!plan)
    return invalidArgument("plan is NULL");
  {
    cuda::DeviceGuard guard(plan->transport->device());
    // Its buffers may still be in use by work on any stream.
    (void)cudaDeviceSynchronize();
    (void)cudaGetLastError();
  }
  delete plan;
  return Status::success();
}

Comm *capacityPlanComm(moecommCapacityPlan *plan) {
  return plan ? plan->comm : nullptr;
}

Status capacityPlanOutputs(moecommCapacityPlan *plan,
                           moecommCapacityOutputs_t *out) {
  if (!plan || !out)
    return invalidArgument("plan and outputs must not be NULL");
  out->recvRows = plan->recvRows;
  out->dropped = plan->dropped;
  out->flags = plan->flags;
  out->tokensPerExpert = plan->tokensPerExpert;
  out->recvWeights = plan->recvWeights;
  out->recvSources = plan->recvSources;
  out->capacity = plan->C;
  out->pairCapacity = plan->P;
  return Status::success();
}

} // namespace moecomm
