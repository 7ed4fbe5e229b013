//===- GpuPlanTest.cpp - Multi-rank plans executed on one GPU -------------===//
//
// The exact mode's device path for W > 1 without NCCL: every rank's plan
// (buildPlans, the code the runtime uses) is uploaded as a DevicePlan and
// executed with the same stage kernels the nccl backend runs
// (DeviceStagedOp::packStage, the unpack gather / reduction), while the
// exchanges are simulated by device-to-device copies between the ranks'
// buffers on this GPU. The results must equal, bit for bit, the same plans
// executed by the CPU kernels (RowKernels.cpp), and dispatch must equal the
// reference oracle. This checks the plan upload and every stage shape
// (hierarchical's two stages, relays, reductions at every step) on one GPU;
// NCCL itself is checked by the single-rank and the mpirun tests.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"

#include "DeviceOps.h"
#include "DevicePlan.h"
#include "RowKernels.h"
#include "moecomm/Runtime/Plan.h"

#include <gtest/gtest.h>

#include <memory>

using namespace moecomm;
using namespace moecomm::test;

namespace {

int64_t offsetOf(const std::vector<int64_t> &counts, size_t m) {
  int64_t o = 0;
  for (size_t j = 0; j < m; ++j)
    o += counts[j];
  return o;
}

int memberOf(const std::vector<int> &group, int rank) {
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i] == rank)
      return (int)i;
  return -1;
}

/// Calls move(r, q, n, so, ro) for every block of stage `s`: n rows from
/// rank q's send rows at row so to rank r's recv rows at row ro, where q is
/// a member of r's group (both plans must agree on n).
template <typename Move>
void forEachBlock(const std::vector<const DirectionPlan *> &dirs, size_t s,
                  Move move) {
  const int W = (int)dirs.size();
  for (int r = 0; r < W; ++r) {
    const StagePlan &me = dirs[r]->stages[s];
    for (size_t m = 0; m < me.group.size(); ++m) {
      const int q = me.group[m];
      const StagePlan &them = dirs[q]->stages[s];
      const int mi = memberOf(them.group, r);
      ASSERT_GE(mi, 0);
      ASSERT_EQ(them.sendCounts[mi], me.recvCounts[m]);
      move(r, q, me.recvCounts[m], offsetOf(them.sendCounts, mi),
           offsetOf(me.recvCounts, m));
    }
  }
}

/// Moves stage `s`'s rows: recv[r] block m = send[group_r[m]] block for r.
/// Host form (CPU executor) and device form.
void exchangeHost(const std::vector<const DirectionPlan *> &dirs, size_t s,
                  std::vector<Rows> &send, std::vector<Rows> &recv) {
  forEachBlock(dirs, s, [&](int r, int q, int64_t n, int64_t so, int64_t ro) {
    const int64_t H = send[q].rows.hidden;
    const int64_t rb = H * elementSize(send[q].rows.type);
    std::memcpy(recv[r].data.data() + ro * rb, send[q].data.data() + so * rb,
                n * rb);
    if (send[q].rows.type == moecommFloat8E4M3) {
      const int64_t nb = (H + 127) / 128;
      std::memcpy(recv[r].scales.data() + ro * nb,
                  send[q].scales.data() + so * nb, n * nb * 4);
    }
  });
}

void exchangeDevice(const std::vector<const DirectionPlan *> &dirs, size_t s,
                    std::vector<DeviceRows> &send,
                    std::vector<DeviceRows> &recv) {
  forEachBlock(dirs, s, [&](int r, int q, int64_t n, int64_t so, int64_t ro) {
    const int64_t H = send[q].rows().hidden;
    const moecommDataType_t type = send[q].rows().type;
    const int64_t rb = H * elementSize(type);
    if (n == 0)
      return;
    CUDA_OK(
        cudaMemcpy(static_cast<uint8_t *>(recv[r].rows().data) + ro * rb,
                   static_cast<const uint8_t *>(send[q].rows().data) + so * rb,
                   n * rb, cudaMemcpyDeviceToDevice));
    if (type == moecommFloat8E4M3) {
      const int64_t nb = (H + 127) / 128;
      CUDA_OK(cudaMemcpy(static_cast<float *>(recv[r].rows().scales) + ro * nb,
                         static_cast<const float *>(send[q].rows().scales) +
                             so * nb,
                         n * nb * 4,
                         cudaMemcpyDeviceToDevice));
    }
  });
}

/// Runs one direction on every rank, on the CPU and on the GPU, and
/// returns each rank's output values ([W], CPU then GPU).
void runDirection(const std::vector<RankPlan> &plans,
                  const std::vector<std::unique_ptr<cuda::DevicePlan>> &dev,
                  moecommDirection_t dir, const std::vector<Rows> &inputs,
                  moecommDataType_t stageType, moecommDataType_t outType,
                  bool weighted, std::vector<std::vector<float>> &cpuOut,
                  std::vector<std::vector<float>> &gpuOut) {
  const int W = (int)plans.size();
  std::vector<const DirectionPlan *> dirs(W);
  for (int r = 0; r < W; ++r)
    dirs[r] = dir == moecommDirectionDispatch ? &plans[r].dispatch
                                              : &plans[r].combine;
  const size_t S = dirs[0]->stages.size();
  const int64_t H = inputs[0].rows.hidden;
  // Inputs of the current stage, host and device.
  std::vector<Rows> hin(W);
  std::vector<DeviceRows> din(W);
  for (int r = 0; r < W; ++r) {
    Rows copy(inputs[r].rows.rows, H, inputs[r].rows.type);
    copy.data = inputs[r].data;
    copy.scales = inputs[r].scales;
    copy.rows.data = copy.data.data();
    copy.rows.scales = copy.scales.empty() ? nullptr : copy.scales.data();
    din[r] = DeviceRows::from(copy);
    hin[r] = std::move(copy);
  }
  for (size_t s = 0; s < S; ++s) {
    std::vector<Rows> hsend, hrecv;
    std::vector<DeviceRows> dsend, drecv;
    for (int r = 0; r < W; ++r) {
      const StagePlan &sp = dirs[r]->stages[s];
      hsend.emplace_back(sp.sendRows(), H, stageType);
      hrecv.emplace_back(sp.recvRows(), H, stageType);
      dsend.emplace_back(sp.sendRows(), H, stageType);
      drecv.emplace_back(sp.recvRows(), H, stageType);
      // CPU pack: PackUnpack.cpp's choice of gather or reduction.
      const RowMap &map = sp.pack;
      moecommRows_t o = hsend[r].rows;
      Status st =
          (dir == moecommDirectionDispatch ||
           (hin[r].rows.type == stageType && isPlainGather(map, weighted)))
              ? gatherRows(map, hin[r].rows, o)
              : reduceRows(map, hin[r].rows, weighted, o);
      ASSERT_TRUE(st.ok()) << st.message;
      st = cuda::DeviceStagedOp::packStage(dev[r]->direction(dir).packs[s], dir,
                                           weighted, stageType, din[r].rows(),
                                           dsend[r].rows(), nullptr);
      ASSERT_TRUE(st.ok()) << st.message;
    }
    CUDA_OK(cudaDeviceSynchronize());
    exchangeHost(dirs, s, hsend, hrecv);
    exchangeDevice(dirs, s, dsend, drecv);
    for (int r = 0; r < W; ++r) {
      hin[r] = std::move(hrecv[r]);
      din[r] = std::move(drecv[r]);
    }
  }
  cpuOut.assign(W, {});
  gpuOut.assign(W, {});
  for (int r = 0; r < W; ++r) {
    const int64_t outRows = dir == moecommDirectionDispatch
                                ? plans[r].recvRows()
                                : plans[r].numTokens;
    Rows hout(outRows, H, outType);
    DeviceRows dout(outRows, H, outType);
    moecommRows_t o = hout.rows;
    const cuda::DeviceMap &dm = dev[r]->direction(dir).unpack;
    Status st;
    if (dir == moecommDirectionDispatch) {
      st = gatherRows(dirs[r]->unpack, hin[r].rows, o);
      ASSERT_TRUE(st.ok()) << st.message;
      ASSERT_NE(dm.gather, nullptr);
      st = cuda::gatherRowsDevice(din[r].rows(), dout.rows(),
                                  cuda::GatherIndex{dm.gather, false}, nullptr);
    } else {
      st = reduceRows(dirs[r]->unpack, hin[r].rows, weighted, o);
      ASSERT_TRUE(st.ok()) << st.message;
      st = cuda::reduceRowsDevice(din[r].rows(), dout.rows(),
                                  dm.reduceMap(weighted), nullptr);
    }
    ASSERT_TRUE(st.ok()) << st.message;
    cpuOut[r] = hout.values();
    gpuOut[r] = dout.values();
  }
}

struct PlanCase {
  CaseSpec spec;
  moecommStrategy_t strategy;
};

CaseSpec spec(int W, int G, int64_t E, int K, int64_t H, moecommDataType_t data,
              moecommDataType_t wire, RoutingKind rk, int64_t T,
              int64_t capacity = 0) {
  const uint64_t seed = W * 11 + G * 5 + K + H + T;
  return CaseSpec{W, G, E, K, H, data, wire, rk, T, capacity, true, seed};
}

/// `c` with expert segments aligned to `align` rows: the padding rows are
/// empty rows of the dispatch unpack (gather index -1 on the device).
CaseSpec aligned(CaseSpec c, int64_t align) {
  c.align = align;
  return c;
}

TEST(GpuPlans, EveryStrategyMatchesTheCpuExecutorBitwise) {
  MOECOMM_REQUIRE_GPU();
  constexpr auto F32 = moecommFloat32, BF16 = moecommBfloat16,
                 FP8 = moecommFloat8E4M3;
  using RK = RoutingKind;
  const CaseSpec specs[] = {
      spec(2, 1, 8, 2, 7, BF16, BF16, RK::Uniform, 9),
      spec(4, 2, 32, 3, 128, BF16, FP8, RK::Skewed, 16),
      spec(4, 2, 16, 5, 129, F32, F32, RK::UniformMasked, 11),
      spec(8, 4, 64, 8, 7168, BF16, FP8, RK::Uniform, 3),
      spec(8, 2, 24, 3, 24, BF16, BF16, RK::OneExpert, 10, 13),
      spec(8, 8, 16, 2, 300, F32, F32, RK::EmptyRanks, 7),
      spec(4, 1, 12, 6, 1, BF16, FP8, RK::AllMasked, 5),
      aligned(spec(4, 2, 16, 3, 129, BF16, FP8, RK::UniformMasked, 9), 16),
      aligned(spec(8, 2, 24, 3, 33, F32, F32, RK::OneExpert, 10, 13), 128),
  };
  for (const CaseSpec &cs : specs)
    for (moecommStrategy_t strategy :
         {moecommPerExpert, moecommFlat, moecommHierarchical}) {
      SCOPED_TRACE(cs.name() + " strategy " + std::to_string(strategy));
      Expected exp = computeExpected(makeProblem(cs));
      const ref::Problem &p = exp.problem;
      std::vector<RankPlan> plans;
      ASSERT_EQ(buildPlans(topologyOf(p), strategy, p.capacity,
                           routingViewsOf(p), plans, p.align),
                "");
      std::vector<std::unique_ptr<cuda::DevicePlan>> dev(p.ranks);
      for (int r = 0; r < p.ranks; ++r) {
        Status st = cuda::DevicePlan::upload(plans[r], dev[r]);
        ASSERT_TRUE(st.ok()) << st.message;
      }
      // Dispatch.
      std::vector<Rows> xs;
      for (int r = 0; r < p.ranks; ++r) {
        xs.push_back(Rows::fromValues(exp.x[r], p.hidden, p.dataType));
        xs.back().rows.rows = p.routing[r].numTokens;
      }
      std::vector<std::vector<float>> cpu, gpu;
      runDirection(plans, dev, moecommDirectionDispatch, xs, p.wireType,
                   p.dataType, false, cpu, gpu);
      for (int r = 0; r < p.ranks; ++r) {
        EXPECT_TRUE(sameBits(gpu[r], cpu[r])) << "dispatch, rank " << r;
        EXPECT_TRUE(sameBits(gpu[r], exp.dispatch[r]))
            << "dispatch vs reference, rank " << r;
      }
      // Combine of y, weighted and not.
      std::vector<Rows> ys;
      for (int r = 0; r < p.ranks; ++r) {
        ys.push_back(Rows::fromValues(exp.y[r], p.hidden, p.dataType));
        ys.back().rows.rows = plans[r].recvRows();
      }
      for (bool weighted : {true, false}) {
        runDirection(plans, dev, moecommDirectionCombine, ys, p.dataType,
                     p.dataType, weighted, cpu, gpu);
        for (int r = 0; r < p.ranks; ++r) {
          EXPECT_TRUE(sameBits(gpu[r], cpu[r]))
              << "combine, rank " << r << (weighted ? " weighted" : "");
          if (strategy == moecommPerExpert)
            EXPECT_TRUE(
                sameBits(gpu[r], weighted ? exp.combineW[r] : exp.combineU[r]))
                << "per_expert combine vs reference, rank " << r;
        }
      }
    }
}

} // namespace
