//===- CompiledAbi.cpp - entry points for compiled MoE graphs -------------===//
//
// The functions convert-moecomm-to-runtime emits calls to (see
// moecomm_compiled.h): thin adapters from MLIR memref descriptors to the
// public C API -- the collectives through the runtime's one checked path
// (Collective.h) -- plus a per-thread bound communicator and sticky error,
// because compiled code cannot branch on return codes. On a thread bound with
// moecommCompiledBindDevice (the device form) the same entry points check
// that their rows lie in device buffers (CompiledBuffers.h), give the
// collectives and staged primitives the bound stream, and run FP8 casts on
// the thread's device (CompiledDevice.h).
//
//===----------------------------------------------------------------------===//

#include "ApiBoundary.h"
#include "Collective.h"
#include "CompiledBuffers.h"
#include "CompiledError.h"
#include "RowKernels.h"
#include "moecomm/Model/Sizes.h"
#include "moecomm/Model/WireFormat.h"
#include "moecomm/moecomm_compiled.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

thread_local moecommComm_t boundComm = nullptr;
thread_local moecommResult_t firstError = moecommSuccess;
thread_local std::string firstMessage;
/// Whether every rank knows about firstError (it came from a collective).
thread_local bool errorShared = false;
thread_local moecommCompiledStats_t stats;

bool stopped() { return firstError != moecommSuccess; }

/// Records a local error (only this rank knows about it).
void fail(moecommResult_t code, const std::string &message) {
  if (stopped())
    return;
  firstError = code;
  firstMessage = message;
}

/// Records a failed runtime call with its message. Calls with a
/// communicator keep their message on it, calls without one (layout
/// queries, FP8 helpers) on the thread; both also record it as the thread's
/// last failure, which is where it is read from, whichever kind failed.
bool ok(moecommResult_t result) {
  if (result == moecommSuccess)
    return true;
  fail(result, moecomm::threadLastFailure().message);
  return false;
}

/// Records the outcome of a collective call; its errors are the same on
/// every rank.
bool collective(moecommResult_t result) {
  if (ok(result))
    return true;
  errorShared = true;
  return false;
}

/// Called by a collective entry point (of the runtime's collective `kind`)
/// of a stopped thread. If the other ranks do not know about its error, this
/// thread takes part in that collective's agreement (Comm::agree, the first
/// thing every collective does) with its first error as its verdict, so
/// every rank stops at the same call, with that error (the cause, whichever
/// rank it came from), instead of waiting for this one; afterwards no rank
/// runs anything. Returns true (the caller returns at once).
bool shareError(moecomm::OpKind kind) {
  if (!errorShared && boundComm) {
    collective(moecomm::onComm(boundComm, [kind](moecomm::Comm &comm) {
      // Whose error it is, said once (compiled code's checks name the rank).
      std::string message = firstMessage;
      if (std::string me = "rank " + std::to_string(comm.rank()) + ": ";
          message.find(me) == std::string::npos)
        message = me + message;
      moecomm::Signature sig(kind);
      sig.setError(moecomm::Status::error(firstError, message));
      return comm.agree(sig, nullptr);
    }));
    errorShared = true;
  }
  return true;
}

/// Address of element 0 of a descriptor.
template <typename MemRef>
void *base(const MemRef *m, moecommDataType_t type) {
  return static_cast<char *>(m->aligned) + m->offset * moecomm::elementSize(type);
}

std::string shapeOf(const moecommMemRef1D *m) {
  return "[" + std::to_string(m->sizes[0]) + "]";
}
std::string shapeOf(const moecommMemRef2D *m) {
  return "[" + std::to_string(m->sizes[0]) + "][" +
         std::to_string(m->sizes[1]) + "]";
}

/// Compiled code allocates the buffers it writes (memref.alloc, i.e.
/// malloc) and passes them on unchecked, so an output buffer without
/// memory but with elements is an allocation that failed: a system error,
/// not a malformed argument. `what` names the buffer.
template <typename MemRef> bool allocated(const MemRef *m, const char *what) {
  if (!m || m->aligned)
    return true;
  for (int64_t size : m->sizes)
    if (size == 0)
      return true;
  fail(moecommSystemError, std::string("out of memory: compiled code could "
                                       "not allocate ") +
                               what + " " + shapeOf(m));
  return false;
}

/// Rows view of a 2-D descriptor: rows must be contiguous. For a buffer
/// compiled code writes, `output` (and `outputScales` when there are
/// scales) names it, and it must be allocated (allocated()) too.
bool rowsOf(const moecommMemRef2D *m, moecommDataType_t type,
            const moecommMemRef2D *scales, moecommRows_t *rows,
            const char *output = nullptr, const char *outputScales = nullptr) {
  if (output && (!allocated(m, output) || !allocated(scales, outputScales)))
    return false;
  for (const moecommMemRef2D *d : {m, scales}) {
    if (!d)
      continue;
    bool contiguous =
        (d->sizes[1] <= 1 || d->strides[1] == 1) &&
        (d->sizes[0] <= 1 || d->strides[0] == d->sizes[1]);
    if (!contiguous) {
      fail(moecommInvalidArgument,
           "compiled code passed non-contiguous rows (sizes [" +
               std::to_string(d->sizes[0]) + ", " +
               std::to_string(d->sizes[1]) + "], strides [" +
               std::to_string(d->strides[0]) + ", " +
               std::to_string(d->strides[1]) + "])");
      return false;
    }
  }
  // The scales of an FP8 row are [rows][fp8Blocks] of its format (f32 or
  // E8M0 bytes): any other shape would be read or written out of bounds.
  if (scales && (scales->sizes[0] != m->sizes[0] ||
                 scales->sizes[1] != moecomm::fp8Blocks(type, m->sizes[1]))) {
    fail(moecommInvalidArgument,
         "compiled code passed scales " + shapeOf(scales) + " for rows " +
             shapeOf(m) + " (want [" +
             std::to_string(m->sizes[0]) + "][" +
             std::to_string(moecomm::fp8Blocks(type, m->sizes[1])) + "])");
    return false;
  }
  rows->data = base(m, type);
  rows->scales = scales ? static_cast<char *>(scales->aligned) +
                              scales->offset * moecomm::fp8ScaleBytes(type)
                        : nullptr;
  rows->rows = m->sizes[0];
  rows->hidden = m->sizes[1];
  rows->type = type;
  return true;
}

/// Whether a vector is contiguous; for a buffer compiled code writes,
/// `output` names it and it must be allocated too.
bool contiguous1D(const moecommMemRef1D *m, const char *output = nullptr) {
  if (output && !allocated(m, output))
    return false;
  if (m->sizes[0] <= 1 || m->strides[0] == 1)
    return true;
  fail(moecommInvalidArgument, "compiled code passed a strided vector");
  return false;
}

/// The stream of the thread's device (NULL without one: host graphs).
moecommStream_t boundStream() {
  moecomm::CompiledDevice *device = moecomm::boundDevice();
  return device ? device->stream() : nullptr;
}

/// Records `st` unless it is success.
bool ok(const moecomm::Status &st) {
  if (st.ok())
    return true;
  fail(st.code, st.message);
  return false;
}

/// On a device-bound thread: rows `what` must lie in device buffers.
bool onDevice(const moecommRows_t &rows, const char *what) {
  return !moecomm::boundDevice() || ok(moecomm::checkDeviceRows(rows, what));
}

/// The device form's view of a vector the host reads or writes through the
/// device (recv_weights, all_to_all counts): whether it lies in a device
/// buffer of a device-bound thread.
bool throughDevice(const void *p, int64_t bytes) {
  return moecomm::boundDevice() && moecomm::inDeviceBuffer(p, bytes);
}

bool commBound() {
  if (boundComm)
    return true;
  fail(moecommInvalidArgument,
       "no communicator is bound to this thread; call moecommCompiledBind");
  return false;
}

/// Adds `layout` to this thread's statistics.
void recordStats(moecommLayout_t layout) {
  moecommLayoutInfo_t info;
  if (!ok(moecommLayoutGetInfo(layout, &info)))
    return;
  ++stats.layouts;
  stats.strategy = info.strategy;
  stats.numStages = info.numStages;
  stats.recvRows += info.recvRows;
  stats.dropped += info.dropped;
  for (int d = 0; d < 2; ++d)
    for (int s = 0; s < info.numStages && s < MOECOMM_MAX_STAGES; ++s) {
      int64_t send = 0, recv = 0;
      if (!ok(moecommLayoutStage(layout, static_cast<moecommDirection_t>(d), s,
                                 &stats.stageScope[d][s], &send, &recv)))
        return;
      stats.stageSendRows[d][s] += send;
      stats.stageRecvRows[d][s] += recv;
    }
}

void *createLayout(moecommMemRef2D *idx, moecommMemRef2D *weights,
                   moecommDataType_t idxType, int64_t ranks,
                   int64_t ranksPerNode, int64_t experts, int32_t strategy,
                   int64_t capacity, int64_t hidden, int32_t wire,
                   int64_t align, int64_t numSlots, const int64_t *slotExperts,
                   int32_t replicaChoice) {
  if (!commBound())
    return nullptr;
  if (stopped()) {
    shareError(moecomm::OpKind::LayoutCreate);
    return nullptr;
  }
  int size = 0, perNode = 0;
  if (!ok(moecommCommSize(boundComm, &size)) ||
      !ok(moecommCommRanksPerNode(boundComm, &perNode)))
    return nullptr;
  if (size != ranks || perNode != ranksPerNode) {
    // The same on every rank (same graph, same communicator).
    fail(moecommMismatch,
         "the graph was compiled for " + std::to_string(ranks) + " ranks x " +
             std::to_string(ranksPerNode) +
             " per node but the communicator has " + std::to_string(size) +
             " ranks x " + std::to_string(perNode) + " per node");
    errorShared = true;
    return nullptr;
  }
  moecommRows_t idxRows, weightRows;
  if (!rowsOf(idx, idxType, nullptr, &idxRows) ||
      !rowsOf(weights, moecommFloat32, nullptr, &weightRows)) {
    shareError(moecomm::OpKind::LayoutCreate);
    return nullptr;
  }
  // The runtime reads [T][K] weights for [T][K] ids, with K as int32.
  if (weightRows.rows != idxRows.rows || weightRows.hidden != idxRows.hidden) {
    fail(moecommInvalidArgument, "compiled code passed topk_weights " +
                                     shapeOf(weights) + " for topk_idx " +
                                     shapeOf(idx));
    shareError(moecomm::OpKind::LayoutCreate);
    return nullptr;
  }
  if (idxRows.hidden > INT32_MAX) {
    fail(moecommInvalidArgument,
         "topk_idx " + shapeOf(idx) + " has more than 2^31 - 1 columns (top-k)");
    shareError(moecomm::OpKind::LayoutCreate);
    return nullptr;
  }
  // The plan is made on the host from the routing the graph's kernels
  // wrote: wait for them (the nccl backend then copies the device routing
  // to the host; the host device reads it in place).
  if (moecomm::CompiledDevice *device = moecomm::boundDevice())
    if (!onDevice(idxRows, "topk_idx") ||
        !onDevice(weightRows, "topk_weights") || !ok(device->synchronize())) {
      shareError(moecomm::OpKind::LayoutCreate);
      return nullptr;
    }
  moecommLayoutDesc_t desc = {};
  desc.numTokens = idxRows.rows;
  desc.topk = static_cast<int32_t>(idxRows.hidden);
  desc.numExperts = experts;
  desc.idxType = idxType;
  desc.topkIdx = idxRows.data;
  desc.topkWeights = static_cast<const float *>(weightRows.data);
  desc.capacity = capacity;
  desc.strategy = static_cast<moecommStrategy_t>(strategy);
  desc.hidden = hidden;
  desc.wireType = static_cast<moecommDataType_t>(wire);
  desc.align = align;
  desc.numSlots = numSlots;
  desc.slotExperts = slotExperts;
  desc.replicaChoice = static_cast<moecommReplicaChoice_t>(replicaChoice);
  moecommLayout_t layout = nullptr;
  if (!collective(moecommLayoutCreate(boundComm, &desc, &layout)))
    return nullptr;
  recordStats(layout);
  stats.wireType = desc.wireType;
  stats.capacity = capacity;
  stats.align = align;
  return layout;
}

moecommLayout_t asLayout(void *layout) {
  return static_cast<moecommLayout_t>(layout);
}

/// Zeros a contiguous int64 vector compiled code allocated (in a device
/// buffer through the device, on its stream). The counts and offsets a
/// failed or skipped call leaves are read by the graph's host code as loop
/// bounds and sizes: zeros make its loops empty instead of reading
/// uninitialized memory.
void zeroCounts(moecommMemRef1D *m) {
  if (!m || !m->aligned || m->sizes[0] <= 0 ||
      (m->sizes[0] > 1 && m->strides[0] != 1))
    return;
  void *at = base(m, moecommInt64);
  const int64_t bytes = m->sizes[0] * 8;
  if (throughDevice(at, bytes))
    moecomm::boundDevice()->zero2D(at, bytes, bytes, 1);
  else
    std::memset(at, 0, static_cast<size_t>(bytes));
}

/// A layout's int64 array (`query`: tokens per expert, expert offsets) into
/// the compiled output vector `out`, named `what` in errors; zeros when the
/// thread is stopped or the query fails.
void layoutArray(void *layout, moecommMemRef1D *out, const char *what,
                 moecommResult_t (*query)(moecommLayout_t, int64_t *)) {
  if (stopped() || !layout || !contiguous1D(out, what))
    return zeroCounts(out);
  // Host metadata in the device form (the graph's host code reads it).
  if (out->sizes[0] > 0 &&
      throughDevice(base(out, moecommInt64), out->sizes[0] * 8)) {
    fail(moecommInvalidArgument,
         std::string("compiled code passed ") + what + " " + shapeOf(out) +
             " in device memory; it is host metadata (moecomm_rt_alloc with "
             "device 0)");
    return zeroCounts(out);
  }
  if (!ok(query(asLayout(layout),
                static_cast<int64_t *>(base(out, moecommInt64)))))
    zeroCounts(out);
}

/// Gather for permute/pack (step >= 0) and unpack (step -1).
void gather(void *layout, int32_t direction, int64_t step, int32_t weighted,
            moecommMemRef2D *in, moecommDataType_t inType,
            moecommMemRef2D *inScales, moecommMemRef2D *out,
            moecommDataType_t outType, moecommMemRef2D *outScales) {
  if (stopped() || !layout)
    return;
  moecommRows_t src, dst;
  if (!rowsOf(out, outType, outScales, &dst, "gather rows", "gather scales") ||
      !rowsOf(in, inType, inScales, &src) || !onDevice(dst, "gather rows") ||
      !onDevice(src, "gather input rows"))
    return;
  auto dir = static_cast<moecommDirection_t>(direction);
  if (step < 0)
    ok(moecommUnpack(boundComm, asLayout(layout), dir, &src, weighted, &dst,
                     boundStream()));
  else
    ok(moecommPack(boundComm, asLayout(layout), dir, static_cast<int>(step),
                   &src, weighted, &dst, boundStream()));
}

/// A collective `kind` of `layout` (its rows to be filled in).
moecomm::CollectiveDesc layoutCollective(moecomm::OpKind kind, void *layout) {
  return moecomm::CollectiveDesc(kind, asLayout(layout), nullptr, nullptr,
                                 nullptr);
}

/// A collective of compiled code (dispatch, combine, exchange, all_to_all)
/// on the bound communicator, when `ready`. `viewRows(src, dst, desc)` makes
/// the rows views (and counts) of its descriptors, recording why it cannot.
/// A thread that is stopped or cannot make them shares its error instead
/// (shareError). Returns the request of a started call (`start`), else
/// nullptr.
template <typename ViewRows>
void *runCompiled(bool ready, moecomm::CollectiveDesc desc, bool start,
                  ViewRows viewRows) {
  if (!ready || (stopped() && shareError(desc.kind)))
    return nullptr;
  moecommRows_t src, dst;
  if (!viewRows(src, dst, desc)) {
    shareError(desc.kind);
    return nullptr;
  }
  desc.in = &src;
  desc.out = &dst;
  desc.stream = boundStream();
  moecommRequest_t request = nullptr;
  collective(
      moecomm::runCollective(boundComm, desc, start ? &request : nullptr));
  return request;
}

/// Blocking or started (`start`) exchange.
void *exchange(bool start, void *layout, int32_t direction, int64_t stage,
               moecommMemRef2D *send, moecommMemRef2D *sendScales,
               moecommMemRef2D *recv, moecommMemRef2D *recvScales,
               moecommDataType_t type) {
  moecomm::CollectiveDesc desc =
      layoutCollective(moecomm::OpKind::Exchange, layout);
  desc.direction = static_cast<moecommDirection_t>(direction);
  desc.stage = static_cast<int>(stage);
  // A null layout means its (collective) creation failed on every rank.
  moecommRows_t sent{}, received{};
  void *request = runCompiled(
      layout != nullptr, desc, start,
      [&](moecommRows_t &src, moecommRows_t &dst, moecomm::CollectiveDesc &) {
        if (!rowsOf(recv, type, recvScales, &dst, "exchange rows",
                    "exchange scales") ||
            !rowsOf(send, type, sendScales, &src) ||
            !onDevice(dst, "exchange recv rows") ||
            !onDevice(src, "exchange send rows"))
          return false;
        sent = src;
        received = dst;
        return true;
      });
  // Its buffers must outlive it: freeing one before the wait is an error.
  if (request && moecomm::boundDevice())
    moecomm::startExchange(request,
                           std::string(direction == moecommDirectionDispatch
                                           ? "dispatch"
                                           : "combine") +
                               " stage " + std::to_string(stage),
                           sent, received);
  return request;
}

/// Quantizes `rows` of `type` into FP8 rows `q` of `fp8Type` with their
/// `scales`, or (!quantize) dequantizes those into `rows`.
void convertFp8(bool quantize, moecommMemRef2D *rows, moecommDataType_t type,
                moecommMemRef2D *q, moecommDataType_t fp8Type,
                moecommMemRef2D *scales) {
  if (stopped())
    return;
  moecommRows_t wide, narrow;
  const bool viewed =
      quantize ? rowsOf(q, fp8Type, scales, &narrow, "quantized rows",
                        "quantization scales") &&
                     rowsOf(rows, type, nullptr, &wide)
               : rowsOf(rows, type, nullptr, &wide, "dequantized rows") &&
                     rowsOf(q, fp8Type, scales, &narrow);
  if (!viewed)
    return;
  if (moecomm::CompiledDevice *device = moecomm::boundDevice()) {
    const moecommRows_t &from = quantize ? wide : narrow;
    const moecommRows_t &to = quantize ? narrow : wide;
    if (onDevice(to, quantize ? "quantized rows" : "dequantized rows") &&
        onDevice(from, quantize ? "rows to quantize" : "rows to dequantize"))
      ok(device->convertRows(from, to));
    return;
  }
  // Traced on the bound communicator, if any (the casts need none).
  std::optional<moecomm::TraceScope> span;
  if (boundComm)
    span.emplace(boundComm->trace(), [&] {
      return moecomm::traceEvent(moecommTraceKindQuantize, moecommTraceDirNone,
                                 -1, moecommScopeGlobal,
                                 moecomm::traceBytes(narrow));
    });
  if (quantize)
    ok(moecommQuantizeFp8(&wide, &narrow));
  else
    ok(moecommDequantizeFp8(&narrow, &wide));
}

/// All-to-all counts as int64, whatever the IR's count type.
bool countsOf(const moecommMemRef1D *m, moecommDataType_t type, int64_t ranks,
              std::vector<int64_t> &counts) {
  if (!contiguous1D(m))
    return false;
  if (m->sizes[0] != ranks) {
    fail(moecommInvalidArgument, "all_to_all counts have " +
                                     std::to_string(m->sizes[0]) +
                                     " entries for " + std::to_string(ranks) +
                                     " ranks");
    return false;
  }
  counts.resize(ranks);
  const int64_t bytes = ranks * moecomm::elementSize(type);
  std::vector<int64_t> staged;
  const void *from = base(m, type);
  // Counts in a device buffer are read through the device (after the
  // stream's work that wrote them).
  if (ranks > 0 && throughDevice(from, bytes)) {
    staged.resize(ranks);
    moecomm::CompiledDevice &device = *moecomm::boundDevice();
    if (!ok(device.copy2D(staged.data(), bytes, from, bytes, bytes, 1)) ||
        !ok(device.synchronize()))
      return false;
    from = staged.data();
  }
  for (int64_t i = 0; i < ranks; ++i)
    counts[i] = type == moecommInt32 ? static_cast<const int32_t *>(from)[i]
                                     : static_cast<const int64_t *>(from)[i];
  return true;
}

/// Writes the all_to_all receive counts into compiled code's vector `m`
/// (through the device when it lies in a device buffer).
bool storeCounts(moecommMemRef1D *m, const std::vector<int64_t> &counts) {
  void *to = base(m, moecommInt64);
  const int64_t bytes = static_cast<int64_t>(counts.size()) * 8;
  if (bytes > 0 && throughDevice(to, bytes))
    return ok(moecomm::boundDevice()->copy2D(to, bytes, counts.data(), bytes,
                                             bytes, 1));
  std::copy(counts.begin(), counts.end(), static_cast<int64_t *>(to));
  return true;
}

bool a2aTopology(int64_t ranks, int64_t ranksPerNode) {
  int size = 0, perNode = 0;
  if (!ok(moecommCommSize(boundComm, &size)) ||
      !ok(moecommCommRanksPerNode(boundComm, &perNode)))
    return false;
  if (size == ranks && perNode == ranksPerNode)
    return true;
  fail(moecommMismatch, "all_to_all was compiled for " + std::to_string(ranks) +
                            " ranks x " + std::to_string(ranksPerNode) +
                            " per node but the communicator has " +
                            std::to_string(size) + " x " +
                            std::to_string(perNode));
  return false;
}

int64_t allToAllCounts(int64_t ranks, int64_t ranksPerNode,
                       moecommMemRef1D *sendCounts, moecommDataType_t type,
                       moecommMemRef1D *recvCounts) {
  if (!commBound() ||
      (stopped() && shareError(moecomm::OpKind::AllToAllCounts))) {
    zeroCounts(recvCounts);
    return 0;
  }
  std::vector<int64_t> send;
  if (!a2aTopology(ranks, ranksPerNode) ||
      !countsOf(sendCounts, type, ranks, send) ||
      !contiguous1D(recvCounts, "all_to_all recv counts")) {
    shareError(moecomm::OpKind::AllToAllCounts);
    zeroCounts(recvCounts);
    return 0;
  }
  std::vector<int64_t> recv(ranks);
  if (!collective(moecommAllToAllCounts(boundComm, send.data(), recv.data())) ||
      !storeCounts(recvCounts, recv)) {
    zeroCounts(recvCounts);
    return 0;
  }
  // Each source's count is checked by its sender; their sum is this rank's.
  int64_t total = 0;
  for (int64_t i = 0; i < ranks; ++i)
    if (!moecomm::checkedAdd(total, recv[i], total)) {
      fail(moecommInvalidArgument, "all_to_all receives more than 2^63 - 1 "
                                   "rows in total");
      return 0;
    }
  return total;
}

void allToAll(int64_t ranks, int64_t ranksPerNode, moecommMemRef2D *send,
              moecommDataType_t type, moecommMemRef1D *sendCounts,
              moecommDataType_t countType, moecommMemRef2D *recv,
              moecommMemRef1D *recvCounts) {
  moecomm::CollectiveDesc desc(moecomm::OpKind::AllToAll, nullptr, nullptr,
                               nullptr, nullptr);
  std::vector<int64_t> sendN, recvN;
  runCompiled(
      commBound(), desc, false,
      [&](moecommRows_t &src, moecommRows_t &dst, moecomm::CollectiveDesc &d) {
        if (!rowsOf(recv, type, nullptr, &dst, "all_to_all rows") ||
            !a2aTopology(ranks, ranksPerNode) ||
            !countsOf(sendCounts, countType, ranks, sendN) ||
            !countsOf(recvCounts, moecommInt64, ranks, recvN) ||
            !rowsOf(send, type, nullptr, &src) ||
            !onDevice(dst, "all_to_all rows") ||
            !onDevice(src, "all_to_all send rows"))
          return false;
        d.sendCounts = sendN.data();
        d.recvCounts = recvN.data();
        return true;
      });
}

/// A one-shot dispatch or combine (`desc`) from `in` into `out`.
void oneShot(moecomm::CollectiveDesc desc, moecommMemRef2D *in,
             moecommMemRef2D *out, moecommDataType_t type) {
  runCompiled(
      desc.layout != nullptr, desc, false,
      [&](moecommRows_t &src, moecommRows_t &dst, moecomm::CollectiveDesc &) {
        return rowsOf(out, type, nullptr, &dst, "output rows") &&
               rowsOf(in, type, nullptr, &src) &&
               onDevice(dst, "output rows") && onDevice(src, "input rows");
      });
}

} // namespace

bool moecomm::compiledStopped() { return stopped(); }

void moecomm::compiledFail(moecommResult_t code, const std::string &message) {
  fail(code, message);
}

extern "C" {

moecommResult_t moecommCompiledBind(moecommComm_t comm) {
  boundComm = comm;
  firstError = moecommSuccess;
  firstMessage.clear();
  errorShared = false;
  stats = moecommCompiledStats_t{};
  moecomm::bindCompiledDevice(nullptr, nullptr);
  return comm ? moecommSuccess : moecommInvalidArgument;
}

moecommResult_t moecommCompiledBindDevice(moecommComm_t comm,
                                          moecommStream_t stream) {
  moecommResult_t bound = moecommCompiledBind(comm);
  if (bound != moecommSuccess) {
    fail(bound, "moecommCompiledBindDevice: comm is NULL");
    return bound;
  }
  moecomm::Status st = moecomm::bindCompiledDevice(comm, stream);
  ok(st);
  return st.code;
}

moecommResult_t moecommCompiledGetStats(moecommCompiledStats_t *out) {
  if (!out)
    return moecommInvalidArgument;
  *out = stats;
  return moecommSuccess;
}

moecommResult_t moecommCompiledStatus(void) { return firstError; }

const char *moecommCompiledLastError(void) { return firstMessage.c_str(); }

// Layouts from topk_idx of <I> ids.
#define MOECOMM_LAYOUT(I, IDX_TYPE)                                            \
  void *_mlir_ciface_moecomm_rt_layout_##I(                                    \
      moecommMemRef2D *idx, moecommMemRef2D *weights, int64_t ranks,           \
      int64_t ranksPerNode, int64_t experts, int32_t strategy,                 \
      int64_t capacity, int64_t hidden, int32_t wire, int64_t align,           \
      int64_t numSlots, const int64_t *slotExperts, int32_t replicaChoice) {   \
    return createLayout(idx, weights, IDX_TYPE, ranks, ranksPerNode, experts,  \
                        strategy, capacity, hidden, wire, align, numSlots,     \
                        slotExperts, replicaChoice);                           \
  }
MOECOMM_LAYOUT(i32, moecommInt32)
MOECOMM_LAYOUT(i64, moecommInt64)
#undef MOECOMM_LAYOUT

void moecomm_rt_layout_release(void *layout) {
  if (layout)
    moecommLayoutDestroy(asLayout(layout));
}

int64_t moecomm_rt_rows(void *layout, int32_t direction, int64_t step,
                        int32_t recv) {
  // A layout made before the rank stopped keeps its counts: the graph may
  // have read its tokens_per_expert already, and sizes the buffers its
  // expert loops slice by those counts with these rows (the pipeline may
  // create a later layout, the one that fails, before them).
  if (!layout)
    return 0;
  if (step < 0) {
    moecommLayoutInfo_t info;
    if (!ok(moecommLayoutGetInfo(asLayout(layout), &info)))
      return 0;
    return direction == moecommDirectionDispatch ? info.recvRows
                                                 : info.numTokens;
  }
  moecommScope_t scope;
  int64_t sendRows = 0, recvRows = 0;
  if (!ok(moecommLayoutStage(asLayout(layout),
                             static_cast<moecommDirection_t>(direction),
                             static_cast<int>(step), &scope, &sendRows,
                             &recvRows)))
    return 0;
  return recv ? recvRows : sendRows;
}

void _mlir_ciface_moecomm_rt_recv_weights(void *layout, moecommMemRef1D *out) {
  if (stopped() || !layout || !contiguous1D(out, "recv_weights"))
    return;
  auto *to = static_cast<float *>(base(out, moecommFloat32));
  moecomm::CompiledDevice *device = moecomm::boundDevice();
  if (!device) {
    ok(moecommLayoutRecvWeights(asLayout(layout), to));
    return;
  }
  // The layout's weights are on the host: through a host vector into the
  // device buffer (the copy is on the stream, after the graph's earlier
  // work on it).
  moecommLayoutInfo_t info;
  if (!ok(moecommLayoutGetInfo(asLayout(layout), &info)))
    return;
  moecommRows_t rows{to, nullptr, info.recvRows, 1, moecommFloat32};
  std::vector<float> weights(info.recvRows);
  const int64_t bytes = info.recvRows * int64_t(sizeof(float));
  if (onDevice(rows, "recv_weights") &&
      ok(moecommLayoutRecvWeights(asLayout(layout), weights.data())) &&
      bytes > 0)
    ok(device->copy2D(to, bytes, weights.data(), bytes, bytes, 1));
}

void _mlir_ciface_moecomm_rt_tokens_per_expert(void *layout,
                                               moecommMemRef1D *out) {
  layoutArray(layout, out, "tokens_per_expert", moecommLayoutTokensPerExpert);
}

void _mlir_ciface_moecomm_rt_expert_offsets(void *layout,
                                            moecommMemRef1D *out) {
  layoutArray(layout, out, "expert_offsets", moecommLayoutExpertOffsets);
}

void moecomm_rt_wait(void *request) {
  if (!request)
    return;
  collective(moecommWait(static_cast<moecommRequest_t>(request)));
  moecomm::completeExchange(request);
}

// Gathers: <in>_<out>, scales follow each f8 side.
#define MOECOMM_GATHER(IN, INT, OUT, OUTT)                                     \
  void _mlir_ciface_moecomm_rt_gather_##IN##_##OUT(                            \
      void *layout, int32_t direction, int64_t step, int32_t weighted,         \
      moecommMemRef2D *in, moecommMemRef2D *out) {                             \
    gather(layout, direction, step, weighted, in, INT, nullptr, out, OUTT,     \
           nullptr);                                                           \
  }
MOECOMM_GATHER(bf16, moecommBfloat16, bf16, moecommBfloat16)
MOECOMM_GATHER(f32, moecommFloat32, f32, moecommFloat32)
#undef MOECOMM_GATHER

// FP8 rows of format F (runtime type FT) kept FP8: gathers and exchanges.
#define MOECOMM_FP8_ROWS(F, FT)                                                \
  void _mlir_ciface_moecomm_rt_gather_##F##_##F(                               \
      void *layout, int32_t direction, int64_t step, int32_t weighted,         \
      moecommMemRef2D *in, moecommMemRef2D *inScales, moecommMemRef2D *out,    \
      moecommMemRef2D *outScales) {                                            \
    gather(layout, direction, step, weighted, in, FT, inScales, out, FT,       \
           outScales);                                                         \
  }                                                                            \
  void _mlir_ciface_moecomm_rt_exchange_##F(                                   \
      void *layout, int32_t direction, int64_t stage, moecommMemRef2D *send,   \
      moecommMemRef2D *sendScales, moecommMemRef2D *recv,                      \
      moecommMemRef2D *recvScales) {                                           \
    exchange(false, layout, direction, stage, send, sendScales, recv,          \
             recvScales, FT);                                                  \
  }                                                                            \
  void *_mlir_ciface_moecomm_rt_exchange_start_##F(                            \
      void *layout, int32_t direction, int64_t stage, moecommMemRef2D *send,   \
      moecommMemRef2D *sendScales, moecommMemRef2D *recv,                      \
      moecommMemRef2D *recvScales) {                                           \
    return exchange(true, layout, direction, stage, send, sendScales, recv,    \
                    recvScales, FT);                                           \
  }
MOECOMM_FP8_ROWS(f8, moecommFloat8E4M3)
MOECOMM_FP8_ROWS(ue8m0, moecommFloat8E4M3UE8M0)
MOECOMM_FP8_ROWS(mxfp8, moecommMxfp8)
#undef MOECOMM_FP8_ROWS

// <T> rows (runtime type TYPE) to and from FP8 rows of format F (FT):
// quantizing and dequantizing gathers, and the conversions named
// quantize_<CONVERT> / dequantize_<CONVERT> (CONVERT: T for f8, T_F else).
#define MOECOMM_FP8_CONVERSIONS(T, TYPE, F, FT, CONVERT)                       \
  void _mlir_ciface_moecomm_rt_gather_##T##_##F(                               \
      void *layout, int32_t direction, int64_t step, int32_t weighted,         \
      moecommMemRef2D *in, moecommMemRef2D *out, moecommMemRef2D *outScales) { \
    gather(layout, direction, step, weighted, in, TYPE, nullptr, out, FT,      \
           outScales);                                                         \
  }                                                                            \
  void _mlir_ciface_moecomm_rt_gather_##F##_##T(                               \
      void *layout, int32_t direction, int64_t step, int32_t weighted,         \
      moecommMemRef2D *in, moecommMemRef2D *inScales, moecommMemRef2D *out) {  \
    gather(layout, direction, step, weighted, in, FT, inScales, out, TYPE,     \
           nullptr);                                                           \
  }                                                                            \
  void _mlir_ciface_moecomm_rt_quantize_##CONVERT(                             \
      moecommMemRef2D *in, moecommMemRef2D *q, moecommMemRef2D *scales) {      \
    convertFp8(true, in, TYPE, q, FT, scales);                                 \
  }                                                                            \
  void _mlir_ciface_moecomm_rt_dequantize_##CONVERT(                           \
      moecommMemRef2D *q, moecommMemRef2D *scales, moecommMemRef2D *out) {     \
    convertFp8(false, out, TYPE, q, FT, scales);                               \
  }
MOECOMM_FP8_CONVERSIONS(bf16, moecommBfloat16, f8, moecommFloat8E4M3, bf16)
MOECOMM_FP8_CONVERSIONS(f32, moecommFloat32, f8, moecommFloat8E4M3, f32)
MOECOMM_FP8_CONVERSIONS(bf16, moecommBfloat16, ue8m0, moecommFloat8E4M3UE8M0,
                        bf16_ue8m0)
MOECOMM_FP8_CONVERSIONS(f32, moecommFloat32, ue8m0, moecommFloat8E4M3UE8M0,
                        f32_ue8m0)
MOECOMM_FP8_CONVERSIONS(bf16, moecommBfloat16, mxfp8, moecommMxfp8,
                        bf16_mxfp8)
MOECOMM_FP8_CONVERSIONS(f32, moecommFloat32, mxfp8, moecommMxfp8, f32_mxfp8)
#undef MOECOMM_FP8_CONVERSIONS

// The one-shot collectives and exchanges of <T> rows (runtime type TYPE).
#define MOECOMM_ROWS(T, TYPE)                                                  \
  void _mlir_ciface_moecomm_rt_dispatch_##T(                                   \
      void *layout, int32_t wire, moecommMemRef2D *x, moecommMemRef2D *recv) { \
    moecomm::CollectiveDesc desc =                                             \
        layoutCollective(moecomm::OpKind::Dispatch, layout);                   \
    desc.wireType = static_cast<moecommDataType_t>(wire);                      \
    oneShot(desc, x, recv, TYPE);                                              \
  }                                                                            \
  void _mlir_ciface_moecomm_rt_combine_##T(void *layout, int32_t weighted,     \
                                           moecommMemRef2D *y,                 \
                                           moecommMemRef2D *out) {             \
    moecomm::CollectiveDesc desc =                                             \
        layoutCollective(moecomm::OpKind::Combine, layout);                    \
    desc.weighted = weighted;                                                  \
    oneShot(desc, y, out, TYPE);                                               \
  }                                                                            \
  void _mlir_ciface_moecomm_rt_exchange_##T(                                   \
      void *layout, int32_t direction, int64_t stage, moecommMemRef2D *send,   \
      moecommMemRef2D *recv) {                                                 \
    exchange(false, layout, direction, stage, send, nullptr, recv, nullptr,    \
             TYPE);                                                            \
  }                                                                            \
  void *_mlir_ciface_moecomm_rt_exchange_start_##T(                            \
      void *layout, int32_t direction, int64_t stage, moecommMemRef2D *send,   \
      moecommMemRef2D *recv) {                                                 \
    return exchange(true, layout, direction, stage, send, nullptr, recv,       \
                    nullptr, TYPE);                                            \
  }
MOECOMM_ROWS(bf16, moecommBfloat16)
MOECOMM_ROWS(f32, moecommFloat32)
#undef MOECOMM_ROWS

// all_to_all of <T> rows with <C> send counts.
#define MOECOMM_ALL_TO_ALL(T, TYPE, C, COUNT_TYPE)                             \
  void _mlir_ciface_moecomm_rt_all_to_all_##T##_##C(                           \
      int64_t ranks, int64_t ranksPerNode, moecommMemRef2D *send,              \
      moecommMemRef1D *sendCounts, moecommMemRef2D *recv,                      \
      moecommMemRef1D *recvCounts) {                                           \
    allToAll(ranks, ranksPerNode, send, TYPE, sendCounts, COUNT_TYPE, recv,    \
             recvCounts);                                                      \
  }
MOECOMM_ALL_TO_ALL(bf16, moecommBfloat16, i32, moecommInt32)
MOECOMM_ALL_TO_ALL(bf16, moecommBfloat16, i64, moecommInt64)
MOECOMM_ALL_TO_ALL(f32, moecommFloat32, i32, moecommInt32)
MOECOMM_ALL_TO_ALL(f32, moecommFloat32, i64, moecommInt64)
MOECOMM_ALL_TO_ALL(i64, moecommInt64, i32, moecommInt32)
MOECOMM_ALL_TO_ALL(i64, moecommInt64, i64, moecommInt64)
#undef MOECOMM_ALL_TO_ALL

void moecomm_rt_check(int32_t ok, const char *where, const char *what,
                      int64_t v0, int64_t v1, int64_t v2, int64_t v3) {
  if (ok || stopped())
    return;
  std::string message = where;
  int rank = 0;
  if (boundComm && moecommCommRank(boundComm, &rank) == moecommSuccess)
    message += ": rank " + std::to_string(rank);
  message += ": ";
  const int64_t values[] = {v0, v1, v2, v3};
  size_t next = 0;
  for (std::string_view rest = what; !rest.empty();) {
    size_t hole = rest.find("{}");
    message += rest.substr(0, hole);
    if (hole == std::string_view::npos)
      break;
    message += next < std::size(values) ? std::to_string(values[next++])
                                        : std::string("{}");
    rest.remove_prefix(hole + 2);
  }
  fail(moecommInvalidArgument, message);
}

int64_t _mlir_ciface_moecomm_rt_all_to_all_counts_i32(
    int64_t ranks, int64_t ranksPerNode, moecommMemRef1D *sendCounts,
    moecommMemRef1D *recvCounts) {
  return allToAllCounts(ranks, ranksPerNode, sendCounts, moecommInt32,
                        recvCounts);
}

int64_t _mlir_ciface_moecomm_rt_all_to_all_counts_i64(
    int64_t ranks, int64_t ranksPerNode, moecommMemRef1D *sendCounts,
    moecommMemRef1D *recvCounts) {
  return allToAllCounts(ranks, ranksPerNode, sendCounts, moecommInt64,
                        recvCounts);
}

} // extern "C"
