//===- Measure.cpp - measured dispatch + combine on the CPU backends ------===//

#include "Measure.h"
#include "RowMemory.h"
#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/RuntimeError.h"
#include "moecomm/Workload/ToolIO.h"

#include "moecomm/Reference/Reference.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#ifdef MOECOMM_HAVE_MPI
#include <mpi.h>
#endif
// After <mpi.h>: moecommCommInitNccl is declared when MPI is.
#include "moecomm/moecomm_nccl.h"

using namespace llvm;

namespace moecomm::bench {

Executor::~Executor() = default;

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double minimum(const std::vector<double> &values) {
  return values.empty() ? 0 : *std::min_element(values.begin(), values.end());
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// One rank's records of one group (no cross-rank reduction yet).
struct RankRecord {
  struct Op {
    std::vector<double> layout, dispatch, combine, total;
    moecommTraffic_t traffic{};
    moecommStrategy_t strategy = moecommPerExpert;
    double payloadErr = 0;
  };
  std::vector<Op> ops;
  std::vector<double> baseline;
  moecommTraffic_t baselineTraffic{};
};

/// A ragged all-to-all of bf16 rows of `hidden` elements: send holds
/// sum(sendCounts) rows sorted by destination, recv receives sum(recvCounts)
/// rows concatenated by source.
using AllToAllFn =
    std::function<Error(const uint16_t *send, const int64_t *sendCounts,
                        uint16_t *recv, const int64_t *recvCounts)>;

Error runtimeFailure(moecommComm_t comm, moecommResult_t rc, int rank,
                     StringRef call) {
  return workload::systemError(formatv("rank {0}: {1} failed ({2}): {3}", rank,
                                       call, moecommGetErrorString(rc),
                                       moecommCommGetLastError(comm)));
}

#define BENCH_CHECK(call)                                                      \
  do {                                                                         \
    moecommResult_t rc_ = (call);                                              \
    if (rc_ != moecommSuccess)                                                 \
      return runtimeFailure(comm, rc_, rank, #call);                           \
  } while (0)

/// The program every rank runs for one group: for each op, warm-up and
/// timed iterations of layout + dispatch + combine; then the baseline. Rows
/// live in `mem` (host or device memory); each timed region ends when
/// mem.synchronize() returns.
Expected<RankRecord> rankProgram(
    moecommComm_t comm, int rank, const RoutingGroup &g,
    const std::vector<std::pair<workload::PayloadType, moecommStrategy_t>> &ops,
    const MeasureOptions &opt, const AllToAllFn &allToAll, RowMemory &mem) {
  const workload::RoutingProblem &p = g.problem();
  const int W = p.ranks;
  const int64_t T = p.numTokens[rank], H = p.hidden;
  const int K = p.topk;
  const int total = opt.warmup + opt.iterations;

  // x (DESIGN.md §8's payload) in both host types: the values are exact in
  // bf16, so both hold the same numbers.
  std::vector<float> xf = ref::standardX(rank, T, H);
  std::vector<uint16_t> xb(xf.size());
  std::transform(xf.begin(), xf.end(), xb.begin(), workload::floatToBf16);
  const size_t rowsTH = static_cast<size_t>(T * H);
  Expected<void *> xfRows = mem.allocate(rowsTH * 4);
  if (!xfRows)
    return xfRows.takeError();
  Expected<void *> xbRows = mem.allocate(rowsTH * 2);
  if (!xbRows)
    return xbRows.takeError();
  Expected<void *> outRows = mem.allocate(rowsTH * 4);
  if (!outRows)
    return outRows.takeError();
  if (Error e = mem.upload(*xfRows, xf.data(), rowsTH * 4))
    return std::move(e);
  if (Error e = mem.upload(*xbRows, xb.data(), rowsTH * 2))
    return std::move(e);
  std::vector<uint8_t> outHost(rowsTH * 4);
  void *recvRows = nullptr;
  size_t recvBytes = 0;

  RankRecord rec;
  for (const auto &[dtype, strategy] : ops) {
    const moecommDataType_t host = workload::hostType(dtype);
    const size_t elem = host == moecommFloat32 ? 4 : 2;
    RankRecord::Op op;
    moecommLayoutDesc_t desc{};
    desc.numTokens = T;
    desc.topk = K;
    desc.numExperts = p.numExperts;
    desc.idxType = moecommInt64;
    desc.topkIdx = p.topkIdx[rank].data();
    desc.topkWeights = p.topkWeights[rank].data();
    desc.capacity = 0;
    desc.strategy = strategy;
    desc.hidden = H;
    desc.wireType = workload::wireType(dtype);
    desc.align = opt.align;
    for (int it = 0; it < total; ++it) {
      const bool first = it == opt.warmup;
      BENCH_CHECK(moecommBarrier(comm));
      BENCH_CHECK(moecommCommResetTraffic(comm));
      const Clock::time_point t0 = Clock::now();
      moecommLayout_t layout = nullptr;
      BENCH_CHECK(moecommLayoutCreate(comm, &desc, &layout));
      if (Error e = mem.synchronize())
        return std::move(e);
      const Clock::time_point t1 = Clock::now();
      moecommLayoutInfo_t info{};
      BENCH_CHECK(moecommLayoutGetInfo(layout, &info));
      if (recvBytes < static_cast<size_t>(info.recvRows * H) * elem) {
        mem.release(recvRows);
        recvBytes = static_cast<size_t>(info.recvRows * H) * elem;
        Expected<void *> r = mem.allocate(recvBytes);
        if (!r)
          return r.takeError();
        recvRows = *r;
      }
      moecommRows_t x{host == moecommFloat32 ? *xfRows : *xbRows, nullptr, T, H,
                      host};
      moecommRows_t recv{recvRows, nullptr, info.recvRows, H, host};
      moecommRows_t out{*outRows, nullptr, T, H, host};
      const Clock::time_point t2 = Clock::now();
      BENCH_CHECK(moecommDispatch(comm, layout, &x, desc.wireType, &recv,
                                  mem.stream()));
      if (Error e = mem.synchronize())
        return std::move(e);
      const Clock::time_point t3 = Clock::now();
      BENCH_CHECK(moecommCombine(comm, layout, &recv, /*weighted=*/1, &out,
                                 mem.stream()));
      if (Error e = mem.synchronize())
        return std::move(e);
      const Clock::time_point t4 = Clock::now();
      if (first) {
        BENCH_CHECK(moecommCommGetTraffic(comm, /*global=*/0, &op.traffic));
        op.strategy = info.strategy;
        if (Error e = mem.download(outHost.data(), *outRows, rowsTH * elem))
          return std::move(e);
        // Identity experts: out[t] = x[t] * sum_k w[t,k] up to rounding.
        double worst = 0;
        for (int64_t t : {int64_t(0), T / 3, T / 2, T - 1}) {
          if (t < 0 || t >= T)
            continue;
          double sumW = 0, sumAbsW = 0;
          for (int k = 0; k < K; ++k)
            if (p.topkIdx[rank][t * K + k] >= 0) {
              sumW += p.topkWeights[rank][t * K + k];
              sumAbsW += std::fabs(p.topkWeights[rank][t * K + k]);
            }
          double amax = 0;
          for (int64_t h = 0; h < H; ++h)
            amax = std::max(amax, std::fabs(double(xf[t * H + h])));
          for (int64_t h = 0; h < H; ++h) {
            const double got =
                host == moecommFloat32
                    ? reinterpret_cast<const float *>(outHost.data())[t * H + h]
                    : workload::bf16ToFloat(reinterpret_cast<const uint16_t *>(
                          outHost.data())[t * H + h]);
            const double err = std::fabs(got - xf[t * H + h] * sumW);
            worst = std::max(worst, err / (amax * sumAbsW + 1e-30));
          }
        }
        op.payloadErr = worst;
      }
      BENCH_CHECK(moecommLayoutDestroy(layout));
      if (it >= opt.warmup) {
        op.layout.push_back(seconds(t0, t1));
        op.dispatch.push_back(seconds(t2, t3));
        op.combine.push_back(seconds(t3, t4));
        op.total.push_back(seconds(t0, t1) + seconds(t2, t4));
      }
    }
    rec.ops.push_back(std::move(op));
  }

  // Baseline: the per-expert rows (one per (token, expert), destination
  // sorted, bf16) to their experts' ranks and back.
  moecomm::Topology topo{W, p.ranksPerNode, p.numExperts};
  std::vector<int64_t> sendCounts = pairCountsOfRank(topo, g.views[rank]);
  std::vector<int64_t> recvCounts(W);
  for (int s = 0; s < W; ++s)
    recvCounts[s] = g.summary.pairs[static_cast<size_t>(s) * W + rank];
  int64_t sendRows = 0, recvRowCount = 0;
  for (int d = 0; d < W; ++d) {
    sendRows += sendCounts[d];
    recvRowCount += recvCounts[d];
  }
  const size_t sendBytes = static_cast<size_t>(sendRows * H) * 2;
  std::vector<uint16_t> send(static_cast<size_t>(sendRows * H)),
      back(static_cast<size_t>(sendRows * H));
  {
    std::vector<int64_t> cursor(W, 0);
    for (int d = 1; d < W; ++d)
      cursor[d] = cursor[d - 1] + sendCounts[d - 1];
    const int64_t perRank = p.numExperts / W;
    for (int64_t t = 0; t < T; ++t)
      for (int k = 0; k < K; ++k) {
        const int64_t e = p.topkIdx[rank][t * K + k];
        if (e < 0)
          continue;
        const int d = static_cast<int>(e / perRank);
        std::memcpy(&send[static_cast<size_t>(cursor[d]++ * H)], &xb[t * H],
                    static_cast<size_t>(H) * 2);
      }
  }
  Expected<void *> sendRowsMem = mem.allocate(sendBytes);
  if (!sendRowsMem)
    return sendRowsMem.takeError();
  Expected<void *> recvRowsMem =
      mem.allocate(static_cast<size_t>(recvRowCount * H) * 2);
  if (!recvRowsMem)
    return recvRowsMem.takeError();
  Expected<void *> backRows = mem.allocate(sendBytes);
  if (!backRows)
    return backRows.takeError();
  if (Error e = mem.upload(*sendRowsMem, send.data(), sendBytes))
    return std::move(e);
  for (int it = 0; it < total; ++it) {
    BENCH_CHECK(moecommBarrier(comm));
    BENCH_CHECK(moecommCommResetTraffic(comm));
    const Clock::time_point t0 = Clock::now();
    if (Error e = allToAll(
            static_cast<const uint16_t *>(*sendRowsMem), sendCounts.data(),
            static_cast<uint16_t *>(*recvRowsMem), recvCounts.data()))
      return std::move(e);
    if (Error e = allToAll(
            static_cast<const uint16_t *>(*recvRowsMem), recvCounts.data(),
            static_cast<uint16_t *>(*backRows), sendCounts.data()))
      return std::move(e);
    if (Error e = mem.synchronize())
      return std::move(e);
    const Clock::time_point t1 = Clock::now();
    if (it == opt.warmup)
      BENCH_CHECK(moecommCommGetTraffic(comm, 0, &rec.baselineTraffic));
    if (it >= opt.warmup)
      rec.baseline.push_back(seconds(t0, t1));
  }
  if (Error e = mem.download(back.data(), *backRows, sendBytes))
    return std::move(e);
  if (back != send)
    return workload::systemError(formatv(
        "rank {0}: the baseline all-to-all did not return the rows it sent",
        rank));
  return rec;
}

/// Reduces the ranks' records: per iteration the maximum over ranks.
GroupMeasurement
reduce(const std::vector<RankRecord> &ranks,
       const std::vector<std::pair<workload::PayloadType, moecommStrategy_t>>
           &ops) {
  GroupMeasurement m;
  auto maxOver = [&](auto get) {
    std::vector<double> out;
    const size_t n = get(ranks[0]).size();
    for (size_t i = 0; i < n; ++i) {
      double v = 0;
      for (const RankRecord &r : ranks)
        v = std::max(v, get(r)[i]);
      out.push_back(v);
    }
    return out;
  };
  for (size_t o = 0; o < ops.size(); ++o) {
    OpMeasurement om;
    om.dtype = ops[o].first;
    om.strategy = ops[o].second;
    om.layoutSec =
        maxOver([&](const RankRecord &r) { return r.ops[o].layout; });
    om.dispatchSec =
        maxOver([&](const RankRecord &r) { return r.ops[o].dispatch; });
    om.combineSec =
        maxOver([&](const RankRecord &r) { return r.ops[o].combine; });
    om.totalSec = maxOver([&](const RankRecord &r) { return r.ops[o].total; });
    for (const RankRecord &r : ranks) {
      om.rankDispatchSec.push_back(median(r.ops[o].dispatch));
      om.rankCombineSec.push_back(median(r.ops[o].combine));
      om.rankTraffic.push_back(r.ops[o].traffic);
      om.rankStrategy.push_back(r.ops[o].strategy);
      om.payloadErr = std::max(om.payloadErr, r.ops[o].payloadErr);
    }
    m.ops.push_back(std::move(om));
  }
  m.baselineSec = maxOver([&](const RankRecord &r) { return r.baseline; });
  return m;
}

/// The baseline all-to-all through the runtime: moecommAllToAll of bf16 rows
/// of `hidden` elements on `comm` (rank `rank` of W), enqueued on `stream`.
AllToAllFn runtimeAllToAll(moecommComm_t comm, int rank, int W, int64_t hidden,
                           void *stream) {
  return [=](const uint16_t *send, const int64_t *sc, uint16_t *recv,
             const int64_t *rc) -> Error {
    int64_t ns = 0, nr = 0;
    for (int q = 0; q < W; ++q) {
      ns += sc[q];
      nr += rc[q];
    }
    moecommRows_t s{const_cast<uint16_t *>(send), nullptr, ns, hidden,
                    moecommBfloat16};
    moecommRows_t d{recv, nullptr, nr, hidden, moecommBfloat16};
    moecommResult_t res = moecommAllToAll(comm, &s, sc, &d, rc, stream);
    if (res != moecommSuccess)
      return runtimeFailure(comm, res, rank, "moecommAllToAll");
    return Error::success();
  };
}

//===--- threads ----------------------------------------------------------===//

class ThreadsExecutor : public Executor {
public:
  bool isRoot() const override { return true; }
  bool canRun(const Cluster &) const override { return true; }

  Expected<GroupMeasurement>
  run(const RoutingGroup &g,
      const std::vector<std::pair<workload::PayloadType, moecommStrategy_t>>
          &ops,
      const MeasureOptions &opt) override {
    const int W = g.topo.ranks();
    std::vector<RankRecord> records(W);
    std::vector<std::string> errors(W);
    Error launched = workload::runOnThreadGroup(
        W, g.topo.ranksPerNode, [&](moecommComm_t comm, int r) {
          moecommCommSetLinkModel(comm, &opt.autoLink);
          std::unique_ptr<RowMemory> mem = makeHostRowMemory();
          Expected<RankRecord> rec = rankProgram(
              comm, r, g, ops, opt,
              runtimeAllToAll(comm, r, W, g.problem().hidden, nullptr), *mem);
          if (!rec)
            errors[r] = toString(rec.takeError());
          else
            records[r] = std::move(*rec);
        });
    if (launched)
      return std::move(launched);
    for (const std::string &e : errors)
      if (!e.empty())
        return workload::systemError(e);
    GroupMeasurement m = reduce(records, ops);
    m.backend = "threads";
    m.baselineKind = "moecommAllToAll";
    for (const RankRecord &r : records)
      m.baselineTraffic.push_back(r.baselineTraffic);
    return m;
  }
};

//===--- mpi --------------------------------------------------------------===//

#ifdef MOECOMM_HAVE_MPI
/// Collective over MPI_COMM_WORLD: every process's record of one group (or
/// its error) on rank 0, reduced there. A failed rank fails every process
/// (its own error on it, "another MPI rank failed" on the others). With
/// `runtimeBaseline`, the baseline's counters (moecommAllToAll) come along;
/// the result of the other ranks is empty but for the labels.
Expected<GroupMeasurement> gatherOnRoot(
    const workload::MpiWorld &world, Expected<RankRecord> rec,
    const std::vector<std::pair<workload::PayloadType, moecommStrategy_t>> &ops,
    const MeasureOptions &opt, StringRef backend, StringRef baselineKind,
    bool runtimeBaseline) {
  const int W = world.size, rank = world.rank;
  const int failed = rec ? 0 : 1;
  if (workload::mpiMaxInt(world, failed)) {
    if (!rec)
      return rec.takeError();
    return workload::systemError(
        "another MPI rank failed during the measurement");
  }

  // Gather every rank's record on rank 0 (fixed sizes on every rank).
  std::vector<double> mine;
  std::vector<moecommTraffic_t> traffic;
  for (const RankRecord::Op &op : rec->ops) {
    for (const std::vector<double> *v :
         {&op.layout, &op.dispatch, &op.combine, &op.total})
      mine.insert(mine.end(), v->begin(), v->end());
    mine.push_back(op.strategy);
    mine.push_back(op.payloadErr);
    traffic.push_back(op.traffic);
  }
  traffic.push_back(rec->baselineTraffic);
  mine.insert(mine.end(), rec->baseline.begin(), rec->baseline.end());
  const int nd = static_cast<int>(mine.size());
  const int nt = static_cast<int>(traffic.size() * sizeof(moecommTraffic_t));
  std::vector<double> allD(rank == 0 ? static_cast<size_t>(nd) * W : 0);
  std::vector<moecommTraffic_t> allT(rank == 0 ? traffic.size() * W : 0);
  MPI_Gather(mine.data(), nd, MPI_DOUBLE, allD.data(), nd, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  MPI_Gather(traffic.data(), nt, MPI_BYTE, allT.data(), nt, MPI_BYTE, 0,
             MPI_COMM_WORLD);
  GroupMeasurement m;
  m.backend = backend.str();
  m.baselineKind = baselineKind.str();
  if (rank != 0)
    return m;
  const size_t iters = static_cast<size_t>(opt.iterations);
  std::vector<RankRecord> records(W);
  for (int r = 0; r < W; ++r) {
    const double *d = allD.data() + static_cast<size_t>(r) * nd;
    const moecommTraffic_t *t =
        allT.data() + static_cast<size_t>(r) * traffic.size();
    for (size_t o = 0; o < ops.size(); ++o) {
      RankRecord::Op op;
      for (std::vector<double> *v :
           {&op.layout, &op.dispatch, &op.combine, &op.total}) {
        v->assign(d, d + iters);
        d += iters;
      }
      op.strategy = static_cast<moecommStrategy_t>(static_cast<int>(*d++));
      op.payloadErr = *d++;
      op.traffic = t[o];
      records[r].ops.push_back(std::move(op));
    }
    records[r].baseline.assign(d, d + iters);
    records[r].baselineTraffic = t[ops.size()];
  }
  GroupMeasurement out = reduce(records, ops);
  out.backend = m.backend;
  out.baselineKind = m.baselineKind;
  if (runtimeBaseline)
    for (const RankRecord &r : records)
      out.baselineTraffic.push_back(r.baselineTraffic);
  return out;
}

class MpiExecutor : public Executor {
public:
  explicit MpiExecutor(workload::MpiWorld world) : world(world) {}
  ~MpiExecutor() override { workload::finalizeMpi(world); }
  bool isRoot() const override { return world.rank == 0; }
  bool canRun(const Cluster &c) const override {
    return c.ranks() == world.size;
  }
  bool sameOnEveryProcess(uint64_t value) const override {
    return workload::mpiSameOnEveryRank(world, value);
  }

  Expected<GroupMeasurement>
  run(const RoutingGroup &g,
      const std::vector<std::pair<workload::PayloadType, moecommStrategy_t>>
          &ops,
      const MeasureOptions &opt) override {
    const int W = world.size, rank = world.rank;
    const int64_t H = g.problem().hidden;
    std::optional<Expected<RankRecord>> rec;
    if (Error e = workload::runOnMpiWorld(
            world, g.topo.ranksPerNode, [&](moecommComm_t comm, int) {
              moecommCommSetLinkModel(comm, &opt.autoLink);
              MPI_Datatype row;
              MPI_Type_contiguous(static_cast<int>(H * 2), MPI_BYTE, &row);
              MPI_Type_commit(&row);
              std::vector<int> sc(W), sd(W), rc(W), rd(W);
              AllToAllFn a2a = [&](const uint16_t *send,
                                   const int64_t *sendCounts, uint16_t *recv,
                                   const int64_t *recvCounts) -> Error {
                int64_t so = 0, ro = 0;
                for (int q = 0; q < W; ++q) {
                  if (so + sendCounts[q] > INT32_MAX ||
                      ro + recvCounts[q] > INT32_MAX)
                    return workload::systemError(
                        "baseline: more than 2^31 rows per rank");
                  sc[q] = static_cast<int>(sendCounts[q]);
                  sd[q] = static_cast<int>(so);
                  rc[q] = static_cast<int>(recvCounts[q]);
                  rd[q] = static_cast<int>(ro);
                  so += sendCounts[q];
                  ro += recvCounts[q];
                }
                if (MPI_Alltoallv(send, sc.data(), sd.data(), row, recv,
                                  rc.data(), rd.data(), row,
                                  MPI_COMM_WORLD) != MPI_SUCCESS)
                  return workload::systemError(
                      formatv("rank {0}: MPI_Alltoallv failed", rank));
                return Error::success();
              };
              std::unique_ptr<RowMemory> mem = makeHostRowMemory();
              rec.emplace(rankProgram(comm, rank, g, ops, opt, a2a, *mem));
              MPI_Type_free(&row);
            }))
      return std::move(e);
    return gatherOnRoot(world, std::move(*rec), ops, opt, "mpi",
                        "MPI_Alltoallv", /*runtimeBaseline=*/false);
  }

private:
  workload::MpiWorld world;
};
#endif

//===--- nccl -------------------------------------------------------------===//

#ifdef MOECOMM_HAVE_NCCL
class NcclExecutor : public Executor {
public:
  /// `world` is null without mpirun (then `comm` is the single-GPU
  /// communicator); `comm` was made with `ranksPerNode`.
  NcclExecutor(std::optional<workload::MpiWorld> world, moecommComm_t comm,
               int ranksPerNode)
      : world(world) {
    comms[ranksPerNode] = comm;
  }
  ~NcclExecutor() override {
    // Before MPI_Finalize (moecomm_nccl.h).
    for (auto &[g, comm] : comms)
      moecommCommDestroy(comm);
    if (world)
      workload::finalizeMpi(*world);
  }
  bool isRoot() const override { return !world || world->rank == 0; }
  bool canRun(const Cluster &c) const override {
    return c.ranks() == (world ? world->size : 1);
  }
  bool sameOnEveryProcess(uint64_t value) const override {
    return !world || workload::mpiSameOnEveryRank(*world, value);
  }

  Expected<GroupMeasurement>
  run(const RoutingGroup &g,
      const std::vector<std::pair<workload::PayloadType, moecommStrategy_t>>
          &ops,
      const MeasureOptions &opt) override {
    const int W = g.topo.ranks(), rank = world ? world->rank : 0;
    Expected<RankRecord> rec = [&]() -> Expected<RankRecord> {
      Expected<moecommComm_t> comm = commFor(g.topo.ranksPerNode);
      if (!comm)
        return comm.takeError();
      moecommCommSetLinkModel(*comm, &opt.autoLink);
      Expected<std::unique_ptr<RowMemory>> mem =
          makeDeviceRowMemory(*comm, rank);
      if (!mem)
        return mem.takeError();
      return rankProgram(
          *comm, rank, g, ops, opt,
          runtimeAllToAll(*comm, rank, W, g.problem().hidden, (*mem)->stream()),
          **mem);
    }();
#ifdef MOECOMM_HAVE_MPI
    if (world)
      return gatherOnRoot(*world, std::move(rec), ops, opt, "nccl",
                          "moecommAllToAll", /*runtimeBaseline=*/true);
#endif
    if (!rec)
      return rec.takeError();
    GroupMeasurement m = reduce({*rec}, ops);
    m.backend = "nccl";
    m.baselineKind = "moecommAllToAll";
    m.baselineTraffic.push_back(rec->baselineTraffic);
    return m;
  }

private:
  /// The communicator of clusters with `ranksPerNode` ranks per node (made
  /// on first use; collective under mpirun, where every process measures
  /// the same groups in the same order).
  Expected<moecommComm_t> commFor(int ranksPerNode) {
    auto it = comms.find(ranksPerNode);
    if (it != comms.end())
      return it->second;
#ifdef MOECOMM_HAVE_MPI
    if (world) {
      moecommComm_t comm = nullptr;
      if (Error e = workload::runtimeError(
              moecommCommInitNccl(&comm, MPI_COMM_WORLD, ranksPerNode, -1),
              nullptr, "moecommCommInitNccl"))
        return std::move(e);
      comms[ranksPerNode] = comm;
      return comm;
    }
#endif
    // Without mpirun W = 1 (canRun), so G = 1: the communicator exists.
    return workload::systemError(
        formatv("no nccl communicator for {0} ranks per node", ranksPerNode));
  }

  std::optional<workload::MpiWorld> world;
  std::map<int, moecommComm_t> comms;
};
#endif

} // namespace

std::unique_ptr<Executor> makeThreadsExecutor() {
  return std::make_unique<ThreadsExecutor>();
}

Expected<std::unique_ptr<Executor>> makeMpiExecutor(int &argc, char **&argv) {
  if (!workload::haveMpi())
    return workload::inputError(
        "--backend mpi is not available: moecomm-bench was built without MPI "
        "(MOECOMM_ENABLE_MPI=OFF or MPI not found)");
#ifdef MOECOMM_HAVE_MPI
  Expected<workload::MpiWorld> world = workload::initMpi(argc, argv);
  if (!world)
    return world.takeError();
  return std::unique_ptr<Executor>(std::make_unique<MpiExecutor>(*world));
#else
  return nullptr; // unreachable: haveMpi() is false
#endif
}

Expected<std::unique_ptr<Executor>> makeNcclExecutor(int &argc, char **&argv) {
#ifndef MOECOMM_HAVE_NCCL
  (void)argc;
  (void)argv;
  // The runtime says why ("built without CUDA/NCCL ..."): its message.
  moecommComm_t comm = nullptr;
  if (Error e = workload::runtimeError(
          moecommCommInitNcclSingle(&comm, -1), nullptr,
          "--backend nccl: moecommCommInitNcclSingle"))
    return std::move(e);
  moecommCommDestroy(comm);
  return workload::inputError("--backend nccl: this build has no CUDA/NCCL");
#else
  if (!workload::launchedByMpirun()) {
    moecommComm_t comm = nullptr;
    if (Error e = workload::runtimeError(
            moecommCommInitNcclSingle(&comm, -1), nullptr,
            "--backend nccl: moecommCommInitNcclSingle"))
      return std::move(e);
    return std::unique_ptr<Executor>(
        std::make_unique<NcclExecutor>(std::nullopt, comm, 1));
  }
#ifdef MOECOMM_HAVE_MPI
  Expected<workload::MpiWorld> world = workload::initMpi(argc, argv);
  if (!world)
    return world.takeError();
  moecommComm_t comm = nullptr;
  if (Error e = workload::runtimeError(
          moecommCommInitNccl(&comm, MPI_COMM_WORLD, world->size, -1), nullptr,
          "--backend nccl: moecommCommInitNccl")) {
    workload::finalizeMpi(*world);
    return std::move(e);
  }
  return std::unique_ptr<Executor>(
      std::make_unique<NcclExecutor>(*world, comm, world->size));
#else
  (void)argc;
  (void)argv;
  return workload::inputError(
      "--backend nccl under mpirun needs MPI: moecomm-bench was built "
      "without MPI (MOECOMM_ENABLE_MPI=OFF or MPI not found)");
#endif
#endif
}

} // namespace moecomm::bench
