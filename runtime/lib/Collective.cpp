//===- Collective.cpp - The one checked path of the collectives -----------===//
#include "Collective.h"

#include "AgreedOp.h"
#include "AllToAll.h"
#include "ApiBoundary.h"
#include "DeviceEngine.h"
#include "LayoutHandle.h"
#include "Request.h"
#include "RowExchange.h"
#include "RowKernels.h"
#include "StagedOp.h"
#include "moecomm/Model/Sizes.h"
#include "moecomm/Model/Traffic.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace moecomm {

namespace {

/// What the checks resolved a collective to: the layout's staged operation
/// (dispatch, combine) or one exchange of whole rows (a layout's stage, the
/// all_to_all).
struct Resolved {
  bool staged = false;
  moecommDirection_t direction = moecommDirectionDispatch;
  /// Staged: the type rows travel in and whether combine weighs them.
  moecommDataType_t stageType = moecommFloat32;
  bool weighted = false;
  /// One exchange: its scope group and rows per member.
  moecommScope_t scope = moecommScopeGlobal;
  std::vector<int64_t> sendCounts, recvCounts;
};

/// The staged operation allocates a block per stage (rows from several
/// sources, a relay's rows for others): each must be addressable, like the
/// caller's blocks, and every rank must know before anything moves.
Status checkStageBlocks(const moecommLayout &layout, moecommDirection_t dir,
                        int64_t H) {
  const DirectionPlan &dp = directionPlan(layout, dir);
  for (size_t s = 0; s < dp.stages.size(); ++s) {
    const int64_t n =
        std::max(dp.stages[s].sendRows(), dp.stages[s].recvRows());
    if (!blockFits(n, H))
      return invalidArgument(cat("stage ", s, " of ", directionName(dir),
                                 " moves ", n, " rows of hidden size ", H,
                                 ": more bytes than memory holds"));
  }
  return Status::success();
}

const char *const kDispatchFields[] = {"the layout", "hidden", "the data type",
                                       "the wire type",
                                       "the pipeline chunk bytes"};
const char *const kCombineFields[] = {"the layout", "hidden", "the data type",
                                      "weighted", "the pipeline chunk bytes"};
const char *const kExchangeFields[] = {"the layout", "the direction",
                                       "the stage", "hidden", "the data type"};
const char *const kAllToAllFields[] = {"hidden", "the data type"};

/// Dispatch (x -> recv) and combine (y -> out): the same checks with the
/// directions' row counts and names; dispatch also checks its wire type.
Status checkStaged(const Comm &comm, const CollectiveDesc &d,
                   moecommDirection_t dir, Signature &sig, Resolved &res) {
  const bool dispatch = dir == moecommDirectionDispatch;
  const char *inName = dispatch ? "x" : "y";
  const char *outName = dispatch ? "recv" : "out";
  const moecommRows_t *in = d.in, *out = d.out;
  const int64_t H = in ? in->hidden : 0;
  Status st = checkLayout(comm, d.layout);
  if (st.ok())
    st = checkRows(in, inName, stageInputRows(*d.layout, dir, 0), H);
  if (st.ok() && H < 1)
    st = invalidArgument(cat("hidden must be >= 1, got ", H));
  if (st.ok() && !isFloatData(in->type))
    st = invalidArgument(
        cat(inName, " must be f32 or bf16, got type ", (int)in->type));
  if (st.ok() && dispatch && d.wireType != in->type && !isFp8(d.wireType))
    st = invalidArgument(
        cat("wire type ", (int)d.wireType, " is neither x's type nor FP8"));
  if (st.ok())
    st = checkRows(out, outName, outputRows(*d.layout, dir), H);
  if (st.ok() && out->type != in->type)
    st = invalidArgument(cat(outName, " has type ", (int)out->type,
                             ", expected ", inName, "'s type ", (int)in->type));
  if (st.ok())
    st = checkStageBlocks(*d.layout, dir, H);
  sig.add(d.layout ? d.layout->id : 0);
  sig.add(H);
  sig.add(in ? (int64_t)in->type : -1);
  sig.add(dispatch ? (int64_t)d.wireType : (d.weighted ? 1 : 0));
  // Sender and receiver cut a block into chunks from this size.
  sig.add(comm.pipelineChunkBytes);
  res.staged = true;
  res.direction = dir;
  res.stageType = dispatch ? d.wireType : (in ? in->type : moecommFloat32);
  res.weighted = !dispatch && d.weighted != 0;
  return st;
}

/// One exchange of whole rows: send holds sum(sendCounts) rows, recv
/// sum(recvCounts) rows, both of send's hidden size and type.
Status checkExchangeRows(const CollectiveDesc &d, const Resolved &res) {
  const int64_t H = d.in ? d.in->hidden : 0;
  auto sum = [](const std::vector<int64_t> &v) {
    return std::accumulate(v.begin(), v.end(), (int64_t)0);
  };
  if (Status st = checkRows(d.in, "send", sum(res.sendCounts), H); !st.ok())
    return st;
  if (Status st = checkRows(d.out, "recv", sum(res.recvCounts), H); !st.ok())
    return st;
  if (d.out->type != d.in->type)
    return invalidArgument(cat("recv has type ", (int)d.out->type,
                               ", send has type ", (int)d.in->type));
  return Status::success();
}

/// One exchange stage of a layout.
Status checkStageExchange(const Comm &comm, const CollectiveDesc &d,
                          Signature &sig, Resolved &res) {
  Status st = checkLayout(comm, d.layout);
  if (st.ok())
    st = checkDirection(d.direction);
  if (st.ok())
    st = checkStage(*d.layout, d.direction, d.stage);
  if (st.ok()) {
    const StagePlan &sp = directionPlan(*d.layout, d.direction).stages[d.stage];
    res.scope = sp.scope;
    res.sendCounts = sp.sendCounts;
    res.recvCounts = sp.recvCounts;
    st = checkExchangeRows(d, res);
  }
  sig.add(d.layout ? d.layout->id : 0);
  sig.add((int64_t)d.direction);
  sig.add(d.stage);
  sig.add(d.in ? d.in->hidden : 0);
  sig.add(d.in ? (int64_t)d.in->type : -1);
  res.direction = d.direction;
  return st;
}

/// The ragged all_to_all over all ranks.
Status checkAllToAll(const Comm &comm, const CollectiveDesc &d, Signature &sig,
                     Resolved &res) {
  Status st = checkCounts(comm, d.sendCounts, "send_counts");
  if (st.ok())
    st = checkCounts(comm, d.recvCounts, "recv_counts");
  if (st.ok()) {
    res.sendCounts.assign(d.sendCounts, d.sendCounts + comm.size());
    res.recvCounts.assign(d.recvCounts, d.recvCounts + comm.size());
    st = checkExchangeRows(d, res);
  }
  sig.add(d.in ? d.in->hidden : 0);
  sig.add(d.in ? (int64_t)d.in->type : -1);
  res.direction = moecommDirectionAllToAll;
  res.scope = moecommScopeGlobal;
  return st;
}

/// The local checks of `d`'s kind; they add its agreed parameters to `sig`
/// (named by `fields`).
Status checkArguments(const Comm &comm, const CollectiveDesc &d, Signature &sig,
                      const char *const *&fields, Resolved &res) {
  switch (d.kind) {
  case OpKind::Dispatch:
    fields = kDispatchFields;
    return checkStaged(comm, d, moecommDirectionDispatch, sig, res);
  case OpKind::Combine:
    fields = kCombineFields;
    return checkStaged(comm, d, moecommDirectionCombine, sig, res);
  case OpKind::Exchange:
    fields = kExchangeFields;
    return checkStageExchange(comm, d, sig, res);
  case OpKind::AllToAll:
    fields = kAllToAllFields;
    return checkAllToAll(comm, d, sig, res);
  default:
    return internalError(cat(opName(d.kind), " moves no rows"));
  }
}

/// Device backends, before the agreement: allocates and checks the device
/// side of the checked collective.
Status prepareDevice(DeviceEngine &dev, Comm &comm, const CollectiveDesc &d,
                     const Resolved &res,
                     std::unique_ptr<DeviceOperation> &devOp) {
  if (res.staged)
    return dev.prepareStaged(comm, *d.layout, res.direction, *d.in, *d.out,
                             res.stageType, res.weighted, d.stream, devOp);
  return dev.prepareExchange(comm, res.direction, res.scope, *d.in,
                             res.sendCounts, *d.out, res.recvCounts, d.stream,
                             devOp);
}

/// Posts a prepared device operation (after the agreement) and hands it
/// out; a posting failure is reported by its finish(), like the host
/// operations' (every rank has agreed, so every rank gets an operation).
Status postDevice(std::unique_ptr<DeviceOperation> devOp,
                  std::unique_ptr<Operation> &op) {
  if (!devOp)
    return internalError("the device engine prepared no operation");
  (void)devOp->post();
  op = std::move(devOp);
  return Status::success();
}

} // namespace

Status checkStream(Comm &comm, moecommStream_t stream) {
  if (stream && !comm.transport().deviceEngine())
    return invalidArgument("streams need the nccl backend; pass NULL on the "
                           "CPU backends");
  return Status::success();
}

Status startCollective(Comm &comm, const CollectiveDesc &desc,
                       bool deferAgreement, std::unique_ptr<Operation> &op) {
  // The whole dispatch / combine span starts here, agreement included.
  const double calledSec = comm.trace().on() ? traceNow() : -1;
  Signature sig(desc.kind);
  const char *const *fields = nullptr;
  Resolved res;
  DeviceEngine *dev = comm.transport().deviceEngine();
  std::unique_ptr<DeviceOperation> devOp;
  Status local = checkStream(comm, desc.stream);
  if (local.ok())
    local = checkArguments(comm, desc, sig, fields, res);
  if (local.ok() && dev)
    local = prepareDevice(*dev, comm, desc, res, devOp);
  sig.setError(onRank(comm.rank(), local));
  auto makeHost = [&](uint64_t seq0) -> std::unique_ptr<HostOperation> {
    if (res.staged)
      return makeStaged(comm, *desc.layout, res.direction, *desc.in, *desc.out,
                        res.stageType, res.weighted, calledSec, seq0);
    return makeRowExchange(comm, res.direction, desc.stage, res.scope, *desc.in,
                           res.sendCounts, *desc.out, res.recvCounts, seq0);
  };
  // A started host collective with good local arguments does not wait for
  // its agreement (AgreedOp.h). The others agree now: a blocking call, a
  // device operation (prepared already), a rank with a local error (it
  // returns that error at once, so it takes part now), and all_to_all,
  // whose count check is a second collective.
  if (deferAgreement && local.ok() && !dev && desc.kind != OpKind::AllToAll) {
    auto agreed = std::make_unique<AgreedOp>(comm, sig, fields);
    agreed->setOperation(makeHost(agreed->opSeq0()));
    op = std::move(agreed);
    return Status::success();
  }
  uint64_t seq0 = 0;
  if (Status st = comm.agree(sig, fields, &seq0); !st.ok())
    return st;
  if (desc.kind == OpKind::AllToAll)
    if (Status st =
            checkCountsTranspose(comm, desc.sendCounts, desc.recvCounts);
        !st.ok())
      return st;
  if (dev)
    return postDevice(std::move(devOp), op);
  std::unique_ptr<HostOperation> host = makeHost(seq0);
  host->begin();
  op = std::move(host);
  return Status::success();
}

moecommResult_t runCollective(moecommComm_t comm, const CollectiveDesc &desc,
                              moecommRequest_t *request) {
  if (request)
    *request = nullptr;
  return onComm(comm, [&](Comm &c) -> Status {
    const uint64_t firstSeq = c.nextSeq();
    std::unique_ptr<Operation> op;
    if (Status st = startCollective(c, desc, request != nullptr, op); !st.ok())
      return st;
    return finishOrHandOut(c, std::move(op), request, firstSeq);
  });
}

} // namespace moecomm
