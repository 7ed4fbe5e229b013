//===- Api.cpp - The C entry points of moecomm.h --------------------------===//
//
// Argument checks that need no communication, error strings, and the
// boundary: no C++ exception crosses it, nothing aborts.
//
//===----------------------------------------------------------------------===//
#include "moecomm/moecomm.h"

#include "AllToAll.h"
#include "ApiBoundary.h"
#include "Collective.h"
#include "Comm.h"
#include "LayoutHandle.h"
#include "PackUnpack.h"
#include "Quantize.h"
#include "Request.h"
#include "ThreadsTransport.h"
#include "moecomm/Model/Sizes.h"

#ifdef MOECOMM_HAVE_MPI
#include "MpiTransport.h"
#include "moecomm/moecomm_mpi.h"
#endif

#include <algorithm>
#include <cstring>
#include <new>

using namespace moecomm;

struct moecommThreadGroup {
  ThreadsShared shared;
  moecommThreadGroup(int n, int g) : shared(n, g) {}
};

std::string &moecomm::threadLastError() {
  thread_local std::string message;
  return message;
}

Status &moecomm::threadLastFailure() {
  thread_local Status failure;
  return failure;
}

namespace {

/// The layout queries that fill a caller's array: copies the plan's `array`
/// into `out`. `out` must not be NULL, except that an array of one entry per
/// received row (`perReceivedRow`) may be NULL when the layout receives no
/// rows; `message` is the InvalidArgument of a NULL layout or `out`.
template <typename T>
moecommResult_t copyLayoutArray(moecommLayout_t layout,
                                std::vector<T> RankPlan::*array, T *out,
                                bool perReceivedRow, const char *message) {
  return noComm([&]() -> Status {
    if (!layout || (!out && (!perReceivedRow || layout->plan.recvRows() > 0)))
      return invalidArgument(message);
    const std::vector<T> &values = layout->plan.*array;
    std::copy(values.begin(), values.end(), out);
    return Status::success();
  });
}

} // namespace

extern "C" {

const char *moecommGetErrorString(moecommResult_t result) {
  switch (result) {
  case moecommSuccess:
    return "success";
  case moecommInvalidArgument:
    return "invalid argument";
  case moecommMismatch:
    return "ranks disagree";
  case moecommSystemError:
    return "system error";
  case moecommUnsupported:
    return "unsupported";
  case moecommInternalError:
    return "internal error";
  default:
    return "unknown result code";
  }
}

const char *moecommCommGetLastError(moecommComm_t comm) {
  if (!comm)
    return threadLastError().c_str();
  return comm->lastError();
}

moecommResult_t moecommThreadGroupCreate(int nranks, int ranksPerNode,
                                         moecommThreadGroup_t *group) {
  return noComm([&]() -> Status {
    if (!group)
      return invalidArgument("group is NULL");
    *group = nullptr;
    if (nranks < 1)
      return invalidArgument(cat("nranks must be >= 1, got ", nranks));
    if (ranksPerNode < 1 || nranks % ranksPerNode != 0)
      return invalidArgument(cat("ranks_per_node ", ranksPerNode,
                                 " does not divide ", nranks, " ranks"));
    *group = new moecommThreadGroup(nranks, ranksPerNode);
    return Status::success();
  });
}

moecommResult_t moecommThreadGroupDestroy(moecommThreadGroup_t group) {
  return noComm([&]() -> Status {
    if (!group)
      return invalidArgument("group is NULL");
    if (int live = group->shared.liveComms(); live > 0)
      return invalidArgument(
          cat("the thread group still has ", live, " communicators"));
    delete group;
    return Status::success();
  });
}

moecommResult_t moecommCommInitThreadRank(moecommComm_t *comm,
                                          moecommThreadGroup_t group,
                                          int rank) {
  return noComm([&]() -> Status {
    if (!comm)
      return invalidArgument("comm is NULL");
    *comm = nullptr;
    if (!group)
      return invalidArgument("group is NULL");
    if (rank < 0 || rank >= group->shared.ranks())
      return invalidArgument(cat("rank ", rank, " is out of range [0, ",
                                 group->shared.ranks(), ")"));
    if (Status st = group->shared.join(rank); !st.ok())
      return st;
    *comm = new moecommComm(createThreadsTransport(group->shared, rank),
                            &group->shared);
    return Status::success();
  });
}

#ifdef MOECOMM_HAVE_MPI
moecommResult_t moecommCommInitMpi(moecommComm_t *comm, MPI_Comm mpiComm,
                                   int ranksPerNode) {
  return noComm([&]() -> Status {
    if (!comm)
      return invalidArgument("comm is NULL");
    *comm = nullptr;
    std::unique_ptr<Transport> t;
    if (Status st = createMpiTransport(mpiComm, ranksPerNode, t); !st.ok())
      return st;
    *comm = new moecommComm(std::move(t));
    return Status::success();
  });
}
#endif

moecommResult_t moecommCommDestroy(moecommComm_t comm) {
  return noComm([&]() -> Status {
    if (!comm)
      return invalidArgument("comm is NULL");
    {
      auto lock = comm->lockForCall();
      if (comm->unwaited() > 0)
        return invalidArgument(cat("rank ", comm->rank(), ": ",
                                   comm->unwaited(),
                                   " requests are still outstanding"));
    }
    delete comm; // joins its progress thread
    return Status::success();
  });
}

moecommResult_t moecommCommRank(moecommComm_t comm, int *rank) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (!rank)
      return invalidArgument("rank is NULL");
    *rank = c.rank();
    return Status::success();
  });
}

moecommResult_t moecommCommSize(moecommComm_t comm, int *nranks) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (!nranks)
      return invalidArgument("nranks is NULL");
    *nranks = c.size();
    return Status::success();
  });
}

moecommResult_t moecommCommRanksPerNode(moecommComm_t comm, int *ranksPerNode) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (!ranksPerNode)
      return invalidArgument("ranksPerNode is NULL");
    *ranksPerNode = c.ranksPerNode();
    return Status::success();
  });
}

moecommResult_t moecommCommBackend(moecommComm_t comm,
                                   moecommBackend_t *backend) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (!backend)
      return invalidArgument("backend is NULL");
    *backend = c.transport().backend();
    return Status::success();
  });
}

moecommResult_t moecommCommSetLinkModel(moecommComm_t comm,
                                        const moecommLinkModel_t *model) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (!model)
      return invalidArgument("model is NULL");
    if (!(model->intraAlphaSec >= 0) || !(model->interAlphaSec >= 0) ||
        !(model->intraBetaBytesPerSec > 0) ||
        !(model->interBetaBytesPerSec > 0))
      return invalidArgument("link model: alphas must be >= 0 and betas > 0");
    c.linkModel = *model;
    return Status::success();
  });
}

moecommResult_t moecommCommSetPipelineChunkBytes(moecommComm_t comm,
                                                 int64_t bytes) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (bytes < 1 || bytes > (int64_t(1) << 40))
      return invalidArgument(
          cat("pipeline chunk bytes must be in [1, 2^40], got ", bytes));
    c.pipelineChunkBytes = bytes;
    return Status::success();
  });
}

moecommResult_t moecommCommGetTraffic(moecommComm_t comm, int global,
                                      moecommTraffic_t *traffic) {
  if (!global)
    return onCommLocal(comm, [&](Comm &c) -> Status {
      if (!traffic)
        return invalidArgument("traffic is NULL");
      *traffic = c.traffic();
      return Status::success();
    });
  return onComm(comm, [&](Comm &c) -> Status {
    Signature sig(OpKind::GetTraffic);
    if (!traffic)
      sig.setError(
          invalidArgument(cat("rank ", c.rank(), ": traffic is NULL")));
    if (Status st = c.agree(sig, nullptr); !st.ok())
      return st;
    std::vector<moecommTraffic_t> all(c.size());
    if (Status st =
            c.allGather(&c.traffic(), sizeof(moecommTraffic_t), all.data());
        !st.ok())
      return st;
    moecommTraffic_t total;
    std::memset(&total, 0, sizeof(total));
    const size_t n = sizeof(moecommTraffic_t) / sizeof(uint64_t);
    for (const moecommTraffic_t &t : all) {
      const uint64_t *src = reinterpret_cast<const uint64_t *>(&t);
      uint64_t *dst = reinterpret_cast<uint64_t *>(&total);
      for (size_t i = 0; i < n; ++i)
        dst[i] += src[i];
    }
    *traffic = total;
    return Status::success();
  });
}

moecommResult_t moecommCommResetTraffic(moecommComm_t comm) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    std::memset(&c.traffic(), 0, sizeof(moecommTraffic_t));
    return Status::success();
  });
}

moecommResult_t moecommCommSetTrace(moecommComm_t comm, int enable) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    c.trace().enable(enable != 0);
    return Status::success();
  });
}

moecommResult_t moecommCommGetTrace(moecommComm_t comm,
                                    moecommTraceEvent_t *events,
                                    int64_t capacity, int64_t *count) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (!count)
      return invalidArgument("count is NULL");
    if (capacity < 0)
      return invalidArgument(cat("capacity must be >= 0, got ", capacity));
    if (capacity > 0 && !events)
      return invalidArgument("events is NULL with capacity > 0");
    const std::vector<moecommTraceEvent_t> &all = c.trace().events();
    *count = (int64_t)all.size();
    std::copy_n(all.begin(), std::min(capacity, *count), events);
    return Status::success();
  });
}

moecommResult_t moecommCommGetTraceDropped(moecommComm_t comm,
                                           int64_t *dropped) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (!dropped)
      return invalidArgument("dropped is NULL");
    *dropped = c.trace().dropped();
    return Status::success();
  });
}

const char *moecommTraceKindName(moecommTraceKind_t kind) {
  switch (kind) {
  case moecommTraceKindLayout:
    return "layout";
  case moecommTraceKindPack:
    return "pack";
  case moecommTraceKindReduce:
    return "reduce";
  case moecommTraceKindQuantize:
    return "quantize";
  case moecommTraceKindExchange:
    return "exchange";
  case moecommTraceKindUnpack:
    return "unpack";
  case moecommTraceKindAllToAll:
    return "all_to_all";
  case moecommTraceKindWait:
    return "wait";
  case moecommTraceKindDispatch:
    return "dispatch";
  case moecommTraceKindCombine:
    return "combine";
  case moecommTraceKindCall:
    return "call";
  default:
    return "unknown";
  }
}

moecommResult_t moecommAllReduceSum(moecommComm_t comm, int64_t *values,
                                    int64_t count) {
  return onComm(comm, [&](Comm &c) -> Status {
    Signature sig(OpKind::AllReduceSum);
    if (count < 0)
      sig.setError(invalidArgument(
          cat("rank ", c.rank(), ": count must be >= 0, got ", count)));
    else if (count > 0 && !values)
      sig.setError(invalidArgument(cat("rank ", c.rank(), ": values is NULL")));
    else if (count > (int64_t(1) << 24))
      sig.setError(invalidArgument(
          cat("rank ", c.rank(), ": count ", count, " is too large")));
    sig.add(count);
    static const char *const names[] = {"count"};
    if (Status st = c.agree(sig, names); !st.ok())
      return st;
    if (count == 0)
      return Status::success();
    std::vector<int64_t> all((size_t)count * c.size());
    if (Status st = c.allGather(values, count * 8, all.data()); !st.ok())
      return st;
    // Every rank sums the same gathered values, so an overflow is found on
    // every rank alike: all return the error and no value is written.
    std::vector<int64_t> sums(count, 0);
    for (int64_t i = 0; i < count; ++i)
      for (int r = 0; r < c.size(); ++r)
        if (!checkedAdd(sums[i], all[(size_t)r * count + i], sums[i]))
          return invalidArgument(cat("the sum of values[", i,
                                     "] over all ranks overflows int64"));
    std::copy(sums.begin(), sums.end(), values);
    return Status::success();
  });
}

moecommResult_t moecommBarrier(moecommComm_t comm) {
  return onComm(comm, [&](Comm &c) -> Status {
    return c.agree(Signature(OpKind::Barrier), nullptr);
  });
}

moecommResult_t moecommLayoutCreate(moecommComm_t comm,
                                    const moecommLayoutDesc_t *desc,
                                    moecommLayout_t *layout) {
  if (layout)
    *layout = nullptr;
  return onComm(comm, [&](Comm &c) -> Status {
    std::unique_ptr<moecommLayout> l;
    if (!layout) {
      // Still take part in the agreement so no rank hangs.
      Signature sig(OpKind::LayoutCreate);
      sig.setError(invalidArgument(cat("rank ", c.rank(), ": layout is NULL")));
      return c.agree(sig, nullptr);
    }
    Status st;
    {
      TraceScope span(c.trace(), [&] {
        return traceEvent(moecommTraceKindLayout, moecommTraceDirNone, -1,
                          moecommScopeGlobal, 0);
      });
      st = createLayout(c, desc, l);
    }
    if (st.ok())
      *layout = l.release();
    return st;
  });
}

moecommResult_t moecommLayoutDestroy(moecommLayout_t layout) {
  return noComm([&]() -> Status {
    if (!layout)
      return invalidArgument("layout is NULL");
    delete layout;
    return Status::success();
  });
}

moecommResult_t moecommLayoutGetInfo(moecommLayout_t layout,
                                     moecommLayoutInfo_t *info) {
  return noComm([&]() -> Status {
    if (!layout || !info)
      return invalidArgument("layout and info must not be NULL");
    *info = layout->info;
    return Status::success();
  });
}

moecommResult_t moecommLayoutTokensPerExpert(moecommLayout_t layout,
                                             int64_t *tokensPerExpert) {
  return copyLayoutArray(layout, &RankPlan::tokensPerExpert, tokensPerExpert,
                         /*perReceivedRow=*/false,
                         "layout and tokensPerExpert must not be NULL");
}

moecommResult_t moecommLayoutExpertOffsets(moecommLayout_t layout,
                                           int64_t *offsets) {
  return copyLayoutArray(layout, &RankPlan::expertOffsets, offsets,
                         /*perReceivedRow=*/false,
                         "layout and offsets must not be NULL");
}

moecommResult_t moecommLayoutRecvWeights(moecommLayout_t layout,
                                         float *recvWeights) {
  return copyLayoutArray(layout, &RankPlan::recvWeights, recvWeights,
                         /*perReceivedRow=*/true,
                         "layout and recvWeights must not be NULL");
}

moecommResult_t moecommLayoutRecvSources(moecommLayout_t layout,
                                         int64_t *sources) {
  return copyLayoutArray(layout, &RankPlan::recvSources, sources,
                         /*perReceivedRow=*/true,
                         "layout and sources must not be NULL");
}

moecommResult_t moecommLayoutStage(moecommLayout_t layout,
                                   moecommDirection_t direction, int stage,
                                   moecommScope_t *scope, int64_t *sendRows,
                                   int64_t *recvRows) {
  return noComm([&]() -> Status {
    if (!layout)
      return invalidArgument("layout is NULL");
    if (Status st = checkDirection(direction); !st.ok())
      return st;
    if (Status st = checkStage(*layout, direction, stage); !st.ok())
      return st;
    const StagePlan &sp = directionPlan(*layout, direction).stages[stage];
    if (scope)
      *scope = sp.scope;
    if (sendRows)
      *sendRows = sp.sendRows();
    if (recvRows)
      *recvRows = sp.recvRows();
    return Status::success();
  });
}

moecommResult_t moecommDispatch(moecommComm_t comm, moecommLayout_t layout,
                                const moecommRows_t *x,
                                moecommDataType_t wireType, moecommRows_t *recv,
                                moecommStream_t stream) {
  return moecommDispatchStart(comm, layout, x, wireType, recv, stream, nullptr);
}

moecommResult_t moecommDispatchStart(moecommComm_t comm, moecommLayout_t layout,
                                     const moecommRows_t *x,
                                     moecommDataType_t wireType,
                                     moecommRows_t *recv,
                                     moecommStream_t stream,
                                     moecommRequest_t *request) {
  CollectiveDesc desc(OpKind::Dispatch, layout, x, recv, stream);
  desc.wireType = wireType;
  return runCollective(comm, desc, request);
}

moecommResult_t moecommCombine(moecommComm_t comm, moecommLayout_t layout,
                               const moecommRows_t *y, int weighted,
                               moecommRows_t *out, moecommStream_t stream) {
  return moecommCombineStart(comm, layout, y, weighted, out, stream, nullptr);
}

moecommResult_t moecommCombineStart(moecommComm_t comm, moecommLayout_t layout,
                                    const moecommRows_t *y, int weighted,
                                    moecommRows_t *out, moecommStream_t stream,
                                    moecommRequest_t *request) {
  CollectiveDesc desc(OpKind::Combine, layout, y, out, stream);
  desc.weighted = weighted;
  return runCollective(comm, desc, request);
}

moecommResult_t moecommWait(moecommRequest_t request) {
  if (!request)
    return failNoComm(invalidArgument("request is NULL"));
  Comm *comm = request->comm;
  auto lock = comm->lockForCall();
  TraceScope call = traceCall(*comm);
  return comm->finish(guarded([&] { return waitRequest(request); }));
}

moecommResult_t moecommAllToAllCounts(moecommComm_t comm,
                                      const int64_t *sendCounts,
                                      int64_t *recvCounts) {
  return onComm(comm, [&](Comm &c) -> Status {
    return allToAllCounts(c, sendCounts, recvCounts);
  });
}

moecommResult_t moecommAllToAll(moecommComm_t comm, const moecommRows_t *send,
                                const int64_t *sendCounts, moecommRows_t *recv,
                                const int64_t *recvCounts,
                                moecommStream_t stream) {
  return moecommAllToAllStart(comm, send, sendCounts, recv, recvCounts, stream,
                              nullptr);
}

moecommResult_t
moecommAllToAllStart(moecommComm_t comm, const moecommRows_t *send,
                     const int64_t *sendCounts, moecommRows_t *recv,
                     const int64_t *recvCounts, moecommStream_t stream,
                     moecommRequest_t *request) {
  CollectiveDesc desc(OpKind::AllToAll, nullptr, send, recv, stream);
  desc.sendCounts = sendCounts;
  desc.recvCounts = recvCounts;
  return runCollective(comm, desc, request);
}

moecommResult_t moecommQuantizeFp8(const moecommRows_t *in,
                                   moecommRows_t *out) {
  return noComm([&]() { return quantizeRows(in, out); });
}

moecommResult_t moecommDequantizeFp8(const moecommRows_t *in,
                                     moecommRows_t *out) {
  return noComm([&]() { return dequantizeRows(in, out); });
}

moecommResult_t moecommPack(moecommComm_t comm, moecommLayout_t layout,
                            moecommDirection_t direction, int stage,
                            const moecommRows_t *in, int weighted,
                            moecommRows_t *out, moecommStream_t stream) {
  return onComm(comm, [&](Comm &c) -> Status {
    return packRows(c, layout, direction, stage, in, weighted, out, stream);
  });
}

moecommResult_t moecommExchange(moecommComm_t comm, moecommLayout_t layout,
                                moecommDirection_t direction, int stage,
                                const moecommRows_t *send, moecommRows_t *recv,
                                moecommStream_t stream) {
  return moecommExchangeStart(comm, layout, direction, stage, send, recv,
                              stream, nullptr);
}

moecommResult_t moecommExchangeStart(moecommComm_t comm, moecommLayout_t layout,
                                     moecommDirection_t direction, int stage,
                                     const moecommRows_t *send,
                                     moecommRows_t *recv,
                                     moecommStream_t stream,
                                     moecommRequest_t *request) {
  CollectiveDesc desc(OpKind::Exchange, layout, send, recv, stream);
  desc.direction = direction;
  desc.stage = stage;
  return runCollective(comm, desc, request);
}

moecommResult_t moecommUnpack(moecommComm_t comm, moecommLayout_t layout,
                              moecommDirection_t direction,
                              const moecommRows_t *in, int weighted,
                              moecommRows_t *out, moecommStream_t stream) {
  return onComm(comm, [&](Comm &c) -> Status {
    return unpackRows(c, layout, direction, in, weighted, out, stream);
  });
}

} // extern "C"
