//===- RunRankWith.h - One rank's calls, on rows wherever they live -------===//
//
// runRank() (host rows, TestUtil.h) and runRankDevice() (device rows,
// test/gpu/GpuTestUtil.h) must make the same calls in the same order, so
// that checkRank() judges both the same way; they differ only in where rows
// live, how rows are quantized to FP8 and which stream the work goes on.
// runRankWith() is that one sequence of calls; each caller passes a Space
// that says those three things:
//
//   Space::RowsType           row storage: RowsType(n, hidden, type), view(),
//                             values() (f32 / bf16 as f32)
//   upload(values, n, hidden, type)
//                             rows of `values` with `n` rows (also n == 0)
//   quantizeFp8(comm, in, out)
//                             in -> FP8 rows (the one-stage staged dispatch)
//   stream()                  the stream every call is given
//   finish()                  waits for the work before the layout goes
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TEST_RUNTIME_RUNRANKWITH_H
#define MOECOMM_TEST_RUNTIME_RUNRANKWITH_H

#include "TestUtil.h"

#include <deque>
#include <string>

namespace moecomm {
namespace test {

/// Drives `rank` of `comm` through layout (of `desc`), one-shot / staged /
/// start-wait dispatch and combine, and combine of identity experts, with
/// rows of `space`. `run` is the run so far: a failure already in it stays
/// the first one reported.
template <typename Space>
RankRun runRankWith(moecommComm_t comm, const Expected &exp,
                    const moecommLayoutDesc_t &desc, int rank, Space &space,
                    RankRun run) {
  using RowsT = typename Space::RowsType;
  const ref::Problem &p = exp.problem;
  const int64_t H = p.hidden, T = p.routing[rank].numTokens;
  const moecommStream_t s = space.stream();
  auto note = [&](moecommResult_t r, const char *what) {
    if (r != moecommSuccess && run.result == moecommSuccess) {
      run.result = r;
      run.error = std::string(what) + ": " + moecommCommGetLastError(comm);
    }
  };
  note(moecommCommResetTraffic(comm), "reset");
  moecommLayout_t layout = nullptr;
  moecommResult_t lr = moecommLayoutCreate(comm, &desc, &layout);
  note(lr, "layout");
  if (lr != moecommSuccess)
    return run; // every rank got the same result
  note(moecommCommGetTraffic(comm, 0, &run.layoutTraffic), "traffic");
  note(moecommLayoutGetInfo(layout, &run.info), "info");
  const int64_t R = run.info.recvRows;
  run.tokensPerExpert.assign(run.info.localExperts, -1);
  run.expertOffsets.assign(run.info.localExperts + 1, -1);
  run.weights.assign(R, -1.0f);
  run.sources.assign(2 * R, -1);
  note(moecommLayoutTokensPerExpert(layout, run.tokensPerExpert.data()), "tpe");
  note(moecommLayoutExpertOffsets(layout, run.expertOffsets.data()), "offsets");
  note(moecommLayoutRecvWeights(layout, run.weights.data()), "weights");
  note(moecommLayoutRecvSources(layout, run.sources.data()), "sources");
  for (int st = 0; st < run.info.numStages; ++st) {
    moecommScope_t sc;
    note(moecommLayoutStage(layout, moecommDirectionDispatch, st, &sc, nullptr,
                            nullptr),
         "stage");
    run.dispatchScopes.push_back(sc);
    note(moecommLayoutStage(layout, moecommDirectionCombine, st, &sc, nullptr,
                            nullptr),
         "stage");
    run.combineScopes.push_back(sc);
  }

  // One-shot dispatch.
  RowsT x = space.upload(exp.x[rank], T, H, p.dataType);
  RowsT recv(R, H, p.dataType);
  note(moecommCommResetTraffic(comm), "reset");
  note(moecommDispatch(comm, layout, x.view(), p.wireType, recv.view(), s),
       "dispatch");
  note(moecommCommGetTraffic(comm, 0, &run.dispatchTraffic), "traffic");
  note(moecommCommGetTraffic(comm, 1, &run.dispatchGlobal), "traffic");
  run.dispatch = recv.values();

  // Staged: pack -> exchange per stage (rows of type `wire`), then unpack
  // into `outRows` rows; the values unpacked.
  auto staged = [&](moecommDirection_t dir, moecommRows_t *in,
                    moecommDataType_t wire, int weighted, int64_t outRows) {
    std::deque<RowsT> keep; // stable addresses: `in` points into it
    for (int st = 0; st < run.info.numStages; ++st) {
      int64_t sendRows = 0, recvRows = 0;
      note(moecommLayoutStage(layout, dir, st, nullptr, &sendRows, &recvRows),
           "stage");
      keep.emplace_back(sendRows, H, wire);
      note(moecommPack(comm, layout, dir, st, in, weighted, keep.back().view(),
                       s),
           "pack");
      keep.emplace_back(recvRows, H, wire);
      note(moecommExchange(comm, layout, dir, st, keep[keep.size() - 2].view(),
                           keep.back().view(), s),
           "exchange");
      in = keep.back().view();
    }
    RowsT out(outRows, H, p.dataType);
    note(moecommUnpack(comm, layout, dir, in, weighted, out.view(), s),
         "unpack");
    return out.values();
  };

  // Staged dispatch; with no stages, an FP8 wire is quantized first.
  {
    RowsT quantized;
    moecommRows_t *in = x.view();
    if (run.info.numStages == 0 && ref::isFp8Wire(p.wireType)) {
      quantized = RowsT(T, H, p.wireType);
      note(space.quantizeFp8(comm, x.view(), quantized.view()), "quantize");
      in = quantized.view();
    }
    run.dispatchStaged = staged(moecommDirectionDispatch, in, p.wireType, 0, R);
  }
  // Start / wait dispatch.
  {
    RowsT out(R, H, p.dataType);
    moecommRequest_t req = nullptr;
    note(moecommDispatchStart(comm, layout, x.view(), p.wireType, out.view(), s,
                              &req),
         "dispatch start");
    if (req)
      note(moecommWait(req), "wait");
    run.dispatchAsync = out.values();
  }

  // Combine of y.
  RowsT y = space.upload(exp.y[rank], R, H, p.dataType);
  {
    RowsT out(T, H, p.dataType);
    note(moecommCommResetTraffic(comm), "reset");
    note(moecommCombine(comm, layout, y.view(), 1, out.view(), s), "combine");
    note(moecommCommGetTraffic(comm, 0, &run.combineTraffic), "traffic");
    note(moecommCommGetTraffic(comm, 1, &run.combineGlobal), "traffic");
    run.combineW = out.values();
    RowsT outU(T, H, p.dataType);
    note(moecommCombine(comm, layout, y.view(), 0, outU.view(), s), "combine");
    run.combineU = outU.values();
  }
  // Staged combine (weighted).
  run.combineStagedW =
      staged(moecommDirectionCombine, y.view(), p.dataType, 1, T);
  {
    RowsT out(T, H, p.dataType);
    moecommRequest_t req = nullptr;
    note(moecommCombineStart(comm, layout, y.view(), 1, out.view(), s, &req),
         "combine start");
    if (req)
      note(moecommWait(req), "wait");
    run.combineAsyncW = out.values();
  }
  // Identity experts: y = the dispatch output.
  {
    RowsT outW(T, H, p.dataType), outU(T, H, p.dataType);
    note(moecommCombine(comm, layout, recv.view(), 1, outW.view(), s),
         "combine");
    note(moecommCombine(comm, layout, recv.view(), 0, outU.view(), s),
         "combine");
    run.identityW = outW.values();
    run.identityU = outU.values();
  }
  space.finish();
  note(moecommLayoutDestroy(layout), "destroy");
  return run;
}

} // namespace test
} // namespace moecomm

#endif // MOECOMM_TEST_RUNTIME_RUNRANKWITH_H
