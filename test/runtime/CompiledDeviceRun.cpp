//===- CompiledDeviceRun.cpp - A layer through the device form ------------===//

#include "CompiledDeviceRun.h"
#include "moecomm/moecomm_compiled.h"

#include <gtest/gtest.h>

#include <cstring>

namespace moecomm {
namespace test {

namespace {

moecommMemRef2D ref2(void *data, int64_t rows, int64_t cols) {
  return moecommMemRef2D{data, data, 0, {rows, cols}, {cols, 1}};
}

/// A driver-allocated device copy of `host` (NULL when empty).
template <typename T> void *upload(const std::vector<T> &host) {
  void *p = nullptr;
  size_t bytes = host.size() * sizeof(T);
  if (moecommCompiledDeviceAlloc(bytes, &p) == moecommSuccess && bytes)
    moecommCompiledDeviceCopy(p, host.data(), bytes);
  return p;
}

/// `n` elements of device memory read back (after the stream's work).
template <typename T> std::vector<T> download(const void *p, int64_t n) {
  std::vector<T> host(n);
  if (n > 0)
    moecommCompiledDeviceCopy(host.data(), p, n * sizeof(T));
  return host;
}

/// moecomm_rt_alloc's device buffer of `rows` f32 rows of `hidden`.
moecommMemRef2D allocRows(int64_t rows, int64_t hidden) {
  moecommMemRef1D m;
  _mlir_ciface_moecomm_rt_alloc(&m, rows * hidden * 4, 1);
  return ref2(m.aligned, rows, hidden);
}

/// Staged `direction` of f32 rows `in` into new rows of `outRows`: per stage
/// a gather into the send rows, exchange_start, wait, and the frees after
/// the wait; then the unpacking gather. The caller frees the result.
moecommMemRef2D staged(void *layout, int32_t direction, moecommMemRef2D in,
                       int32_t weighted, int64_t outRows) {
  const int64_t H = in.sizes[1];
  moecommLayoutInfo_t info{};
  if (layout)
    moecommLayoutGetInfo(static_cast<moecommLayout_t>(layout), &info);
  moecommMemRef2D cur = in;
  bool owned = false;
  for (int st = 0; st < info.numStages; ++st) {
    moecommMemRef2D send =
        allocRows(moecomm_rt_rows(layout, direction, st, 0), H);
    moecommMemRef2D recv =
        allocRows(moecomm_rt_rows(layout, direction, st, 1), H);
    _mlir_ciface_moecomm_rt_gather_f32_f32(layout, direction, st, weighted,
                                           &cur, &send);
    void *request = _mlir_ciface_moecomm_rt_exchange_start_f32(
        layout, direction, st, &send, &recv);
    moecomm_rt_wait(request);
    moecomm_rt_free(send.aligned);
    if (owned)
      moecomm_rt_free(cur.aligned);
    cur = recv;
    owned = true;
  }
  moecommMemRef2D out = allocRows(outRows, H);
  _mlir_ciface_moecomm_rt_gather_f32_f32(layout, direction, -1, weighted, &cur,
                                         &out);
  if (owned)
    moecomm_rt_free(cur.aligned);
  return out;
}

} // namespace

CaseSpec f32Spec(int W, int G, int64_t T) {
  return CaseSpec{
      W, G, 8, 2, 64, moecommFloat32, moecommFloat32, RoutingKind::Uniform, T};
}

void forEveryStrategy(
    const CaseSpec &spec,
    const std::function<void(const Expected &, int32_t,
                             const std::vector<RankRun> &)> &check) {
  Expected exp = computeExpected(makeProblem(spec));
  for (int32_t strategy : {0, 1, 2, 3}) {
    SCOPED_TRACE("strategy " + std::to_string(strategy));
    check(exp, strategy,
          runEveryRank(exp, static_cast<moecommStrategy_t>(strategy)));
  }
}

CompiledDeviceRun runCompiledDevice(moecommComm_t comm, const Expected &exp,
                                    int rank, int32_t strategy,
                                    moecommStream_t stream) {
  CompiledDeviceRun run;
  const ref::Problem &p = exp.problem;
  const ref::RankRouting &rr = p.routing[rank];
  const int64_t T = rr.numTokens, K = p.topk, H = p.hidden;
  if (moecommCompiledBindDevice(comm, stream) != moecommSuccess) {
    run.status = moecommCompiledStatus();
    run.error = moecommCompiledLastError();
    return run;
  }
  // The graph's arguments.
  // Empty weights are all 1.0 (ref::RankRouting).
  std::vector<float> weights = rr.topkWeights;
  if (weights.empty())
    weights.assign(T * K, 1.0f);
  void *idx = upload(rr.topkIdx), *w = upload(weights),
       *x = upload(exp.x[rank]), *y = upload(exp.y[rank]);
  moecommMemRef2D idxRef = ref2(idx, T, K), wRef = ref2(w, T, K),
                  xRef = ref2(x, T, H);
  void *layout = _mlir_ciface_moecomm_rt_layout_i64(
      &idxRef, &wRef, p.ranks, p.ranksPerNode, p.numExperts, strategy,
      p.capacity, H, moecommFloat32, p.align, 0, nullptr, 0);
  const int64_t R = moecomm_rt_rows(layout, moecommDirectionDispatch, -1, 0);
  const int64_t L = p.localExperts();
  // The graph's buffers, as moecomm-device-buffers allocates them.
  moecommMemRef1D recvMem, weightMem, countMem, outMem;
  _mlir_ciface_moecomm_rt_alloc(&recvMem, R * H * 4, 1);
  _mlir_ciface_moecomm_rt_alloc(&weightMem, R * 4, 1);
  _mlir_ciface_moecomm_rt_alloc(&countMem, L * 8, 0);
  _mlir_ciface_moecomm_rt_alloc(&outMem, T * H * 4, 1);
  moecommMemRef2D recvRef = ref2(recvMem.aligned, R, H), yRef = ref2(y, R, H),
                  outRef = ref2(outMem.aligned, T, H);
  moecommMemRef1D weightRef{weightMem.aligned, weightMem.aligned, 0, {R}, {1}};
  moecommMemRef1D countRef{countMem.aligned, countMem.aligned, 0, {L}, {1}};
  _mlir_ciface_moecomm_rt_dispatch_f32(layout, moecommFloat32, &xRef, &recvRef);
  _mlir_ciface_moecomm_rt_recv_weights(layout, &weightRef);
  _mlir_ciface_moecomm_rt_tokens_per_expert(layout, &countRef);
  _mlir_ciface_moecomm_rt_combine_f32(layout, 1, &yRef, &outRef);
  moecommMemRef2D stagedRecv =
                      staged(layout, moecommDirectionDispatch, xRef, 0, R),
                  stagedOut =
                      staged(layout, moecommDirectionCombine, yRef, 1, T);
  moecommCompiledDeviceSynchronize();
  if (moecommCompiledStatus() == moecommSuccess) {
    run.dispatch = download<float>(recvMem.aligned, R * H);
    run.weights = download<float>(weightMem.aligned, R);
    const auto *counts = static_cast<const int64_t *>(countMem.aligned);
    run.tokensPerExpert.assign(counts, counts + L);
    run.combineW = download<float>(outMem.aligned, T * H);
    run.dispatchStaged = download<float>(stagedRecv.aligned, R * H);
    run.combineStagedW = download<float>(stagedOut.aligned, T * H);
  }
  moecomm_rt_free(stagedRecv.aligned);
  moecomm_rt_free(stagedOut.aligned);
  moecomm_rt_layout_release(layout);
  for (moecommMemRef1D *m : {&recvMem, &weightMem, &countMem, &outMem})
    moecomm_rt_free(m->aligned);
  for (void *arg : {idx, w, x, y})
    moecommCompiledFree(arg);
  run.status = moecommCompiledStatus();
  run.error = moecommCompiledLastError();
  return run;
}

void checkCompiledDeviceRun(const Expected &exp, int rank,
                            const CompiledDeviceRun &run,
                            const std::vector<float> &combineW) {
  ASSERT_EQ(run.status, moecommSuccess) << run.error;
  const ref::RankLayout &L = exp.layout[rank];
  EXPECT_TRUE(sameBits(run.dispatch, exp.dispatch[rank])) << "dispatch";
  EXPECT_TRUE(sameBits(run.dispatchStaged, exp.dispatch[rank]))
      << "staged dispatch";
  ASSERT_EQ(run.weights.size(), L.rows.size());
  for (size_t i = 0; i < L.rows.size(); ++i)
    EXPECT_EQ(std::memcmp(&run.weights[i], &L.rows[i].weight, 4), 0)
        << "weight of row " << i;
  EXPECT_EQ(run.tokensPerExpert, L.tokensPerExpert);
  EXPECT_TRUE(sameBits(run.combineW, combineW)) << "weighted combine";
  EXPECT_TRUE(sameBits(run.combineStagedW, combineW))
      << "staged weighted combine";
}

} // namespace test
} // namespace moecomm
