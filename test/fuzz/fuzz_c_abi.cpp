//===- fuzz_c_abi.cpp - libFuzzer target for the runtime's C ABI ----------===//
//
// Decodes its input into a sequence of calls of moecomm.h, moecomm_nccl.h
// and moecomm_compiled.h on threads-backend communicators: the first byte
// picks 1 rank, 2 ranks (1 or 2 per node) or 4 ranks (2 per node), one
// thread per rank. Layouts with arbitrary counts, ids, weights and enum
// values (any int), their queries, dispatch / combine (blocking and
// start/wait), the staged primitives (pack / exchange / unpack per stage),
// all_to_all, the FP8 helpers, error strings, traffic, the nccl header's
// entry points, and the compiled graphs' entry points with memref
// descriptors (NULL outputs as after a failed malloc). Every call must
// return a documented result code with a message (compiled code: a
// recorded status with a message); a crash, a sanitizer report, a leak or
// a hang (libFuzzer's -timeout) is a bug in the runtime.
//
// Every rank decodes the same bytes into the same calls, reading the same
// number of bytes per call, with per-rank token counts and ids; a call the
// harness skips is skipped by every rank (agreed with moecommAllReduceSum),
// so collectives stay in step as the ABI requires. The harness also keeps
// the contract the runtime cannot check: every buffer is as large as the
// shape it is passed with. A shape whose byte count overflows int64 (the
// runtime must reject it) is passed with a small buffer; a valid shape
// larger than kMaxBlockBytes is not passed (it would only test the
// allocator). Accepted expert counts stay small for the same reason (a
// layout holds E / W counters).
//
// Build and run for a bounded time (clang-22, the fuzz preset: ASan + UBSan
// + libFuzzer; findings and a triage in build-fuzz/fuzz/fuzz_c_abi/):
//   scripts/fuzz.sh 300 fuzz_c_abi
// or by hand (new inputs go to the first directory):
//   cmake --preset fuzz && cmake --build build-fuzz --target fuzz_c_abi
//   mkdir -p build-fuzz/corpus-c-abi
//   build-fuzz/bin/fuzz_c_abi build-fuzz/corpus-c-abi \
//       test/fuzz/seeds/c_abi -max_total_time=300 -timeout=10 \
//       -rss_limit_mb=4096 -print_final_stats=1
// Reproduce a finding:  build-fuzz/bin/fuzz_c_abi crash-<sha1>
// The seeds (short programs for each topology) are written by the target:
//   build-fuzz/bin/fuzz_c_abi -write_seeds=test/fuzz/seeds/c_abi
//
//===----------------------------------------------------------------------===//
#include "moecomm/moecomm.h"
#include "moecomm/moecomm_compiled.h"
#include "moecomm/moecomm_nccl.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

/// Largest block the harness allocates for a call.
constexpr int64_t kMaxBlockBytes = int64_t(1) << 22;

/// The input as a stream of choices; zeros once it is used up.
class Input {
public:
  Input(const uint8_t *data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
  template <typename T> T raw() {
    T v{};
    size_t n = std::min<size_t>(sizeof(T), end_ - p_);
    std::memcpy(&v, p_, n);
    p_ += n;
    return v;
  }
  bool chance(int outOf) { return u8() % outOf == 0; }
  template <typename T, size_t N> T pick(const T (&values)[N]) {
    return values[u8() % N];
  }

private:
  const uint8_t *p_, *end_;
};

/// Values of an int64 size field: small ones, then ones that must be
/// rejected or are edge cases.
const int64_t kOddSizes[] = {-1,
                             INT64_MIN,
                             INT64_MAX,
                             INT64_MAX / 8,
                             INT64_MAX / 8 + 1,
                             int64_t(1) << 31,
                             int64_t(1) << 40,
                             int64_t(1) << 59,
                             int64_t(1) << 62};

/// Any int for an enum: mostly its valid values, sometimes any 32 bits.
int enumValue(Input &in, int numValid) {
  if (!in.chance(4))
    return in.u8() % (numValid + 1);
  return in.raw<int32_t>();
}

/// A block of rows passed to a call, with its own storage.
struct Block {
  std::vector<uint64_t> data; // 8-byte aligned storage
  std::vector<float> scales;
  moecommRows_t rows{};
};

/// Fills `b` with a shape near [wantRows][wantHidden] of a fuzzed type.
/// Returns false when the call must be skipped: a valid shape too large to
/// allocate.
bool makeBlock(Input &in, int64_t wantRows, int64_t wantHidden, int wantType,
               Block &b) {
  // Off by one (or an odd size) now and then; wanted sizes may be odd too.
  auto near = [&](int64_t want) {
    int64_t v;
    if (!in.chance(6))
      return want;
    if (in.chance(2))
      return in.pick(kOddSizes);
    return __builtin_add_overflow(want, (in.u8() % 3) - 1, &v) ? want : v;
  };
  const int64_t rows = near(wantRows), hidden = near(wantHidden);
  int type = in.chance(8) ? enumValue(in, moecommMxfp8) : wantType;
  b.rows.rows = rows;
  b.rows.hidden = hidden;
  b.rows.type = static_cast<moecommDataType_t>(type);
  b.rows.data = nullptr;
  b.rows.scales = nullptr;
  int64_t elements = 0, bytes = 0;
  const bool overflows = rows < 0 || hidden < 0 ||
                         __builtin_mul_overflow(rows, hidden, &elements) ||
                         __builtin_mul_overflow(elements, 8, &bytes);
  // Too large to allocate: decided after reading all of this block's input
  // bytes, so that the ranks stay in step.
  const bool tooLarge = !overflows && bytes > kMaxBlockBytes;
  // Must be rejected: a small buffer, never read if the runtime is right.
  const int64_t words = overflows || tooLarge ? 8 : (bytes + 7) / 8;
  // ceil(hidden / 128) f32 words without forming hidden + 127 (hidden may
  // be huge): enough for the E8M0 formats' ceil(hidden / 32) bytes too.
  const int64_t blocks = overflows || tooLarge
                             ? 2
                             : rows * (hidden / 128 + (hidden % 128 != 0));
  b.data.assign(std::max<int64_t>(words, 1), 0);
  b.scales.assign(std::max<int64_t>(blocks, 1), 1.0f);
  // Some contents from the input (NaNs, infinities, subnormals). The same
  // number of bytes whatever the shape: ranks of different shapes stay in
  // step.
  uint8_t pattern[16];
  for (uint8_t &byte : pattern)
    byte = in.u8();
  uint8_t *d = reinterpret_cast<uint8_t *>(b.data.data());
  for (int64_t i = 0, n = std::min<int64_t>(words * 8, 256); i < n; ++i)
    d[i] = pattern[i % 16] ^ uint8_t(i / 16);
  if (!b.scales.empty() && in.chance(4))
    b.scales[0] = in.raw<float>();
  if (!in.chance(12))
    b.rows.data = b.data.data();
  if (!in.chance(12))
    b.rows.scales = b.scales.data();
  return !tooLarge;
}

/// A layout desc with its routing storage.
struct Routing {
  std::vector<int64_t> ids64;
  std::vector<int32_t> ids32;
  std::vector<float> weights;
  moecommLayoutDesc_t desc{};
};

/// Rank `rank`'s routing: sizes and enums are the same on every rank unless
/// the input makes them differ; token counts and ids differ per rank. Every
/// rank reads the same number of input bytes.
void makeRouting(Input &in, int rank, Routing &r) {
  const uint8_t tBase = in.u8(), tStep = in.u8();
  const int64_t T = (tBase + rank * tStep) % 9;
  const int K = 1 + in.u8() % 4;
  const int64_t expertChoices[] = {1, 2, 3, 4, 8, 16, 64};
  int64_t E = in.pick(expertChoices);
  const bool oddE = in.chance(8);
  if (oddE) {
    // Rejected (E < 1 or beyond 31 bits) or the largest small-ish E.
    const int64_t odd[] = {0, -1, INT64_MIN, INT64_MAX, int64_t(1) << 31,
                           int64_t(1) << 40, 1 << 16};
    E = in.pick(odd);
  }
  // Ids in [-1, E] (E is out of range) from a pattern, shifted per rank;
  // 0xff in the pattern stands for an arbitrary int64.
  uint8_t pattern[16];
  for (uint8_t &byte : pattern)
    byte = in.u8();
  const int64_t anyId = in.raw<int64_t>();
  const float anyWeight = in.raw<float>();
  const int64_t span = std::min<int64_t>(std::max<int64_t>(E, 1), 64) + 2;
  r.ids64.resize(T * K);
  r.ids32.resize(T * K);
  r.weights.resize(T * K);
  for (int64_t i = 0; i < T * K; ++i) {
    const uint8_t b = pattern[i % 16];
    const int64_t id =
        b == 0xff ? anyId : int64_t((b + i / 16 + rank * 5) % span) - 1;
    r.ids64[i] = id;
    r.ids32[i] = static_cast<int32_t>(id);
    r.weights[i] = b == 0xfe ? anyWeight : (b % 9) / 8.0f;
  }
  moecommLayoutDesc_t &d = r.desc;
  d.numTokens = T;
  d.topk = K;
  d.numExperts = E;
  d.idxType = in.chance(2) ? moecommInt64 : moecommInt32;
  if (in.chance(10))
    d.idxType = static_cast<moecommDataType_t>(enumValue(in, moecommInt64));
  d.topkIdx = d.idxType == moecommInt32 ? static_cast<const void *>(
                                              r.ids32.data())
                                        : r.ids64.data();
  d.topkWeights = in.chance(4) ? nullptr : r.weights.data();
  const int64_t capacities[] = {0, 1, 2, 3, 5, -1, INT64_MAX, INT64_MIN};
  d.capacity = in.chance(2) ? 0 : in.pick(capacities);
  d.strategy = static_cast<moecommStrategy_t>(enumValue(in, moecommAuto));
  const int64_t hints[] = {0,  1,          7168, 129, -1, INT64_MAX,
                           INT64_MAX / 8, INT64_MAX / 8 + 1};
  d.hidden = in.pick(hints);
  d.wireType = static_cast<moecommDataType_t>(enumValue(in, moecommMxfp8));
  // Segment alignments: 0 (= 1), powers of two up to the bound, and
  // rejected ones (not a power of two, negative, beyond the bound).
  const int64_t aligns[] = {
      0, 1, 2, 16, 128, MOECOMM_MAX_ALIGN,            // valid
      3, -1, -128, MOECOMM_MAX_ALIGN * 2, INT64_MIN}; // rejected
  d.align = in.chance(2) ? 0 : in.pick(aligns);
  // Sizes that must be rejected before any id is read: T x K ids whose
  // bytes overflow, a negative T or K.
  if (in.chance(10)) {
    const int64_t badT[] = {-1, INT64_MIN, INT64_MAX, int64_t(1) << 61,
                            int64_t(1) << 62};
    d.numTokens = in.pick(badT);
  } else if (in.chance(16)) {
    const int badK[] = {0, -1, INT_MIN};
    d.topk = in.pick(badK);
  } else if (const bool hugeK = in.chance(8); hugeK && T == 0) {
    d.topk = INT_MAX; // nothing to read (other ranks: a K mismatch)
  }
}

/// A started operation and the buffers it uses until moecommWait.
struct Pending {
  moecommRequest_t request = nullptr;
  std::vector<std::unique_ptr<Block>> blocks;
};

/// One rank's calls. Every rank decodes the same input the same way (the
/// same calls in the same order, as collectives require) and reads the
/// same number of bytes in each call; sizes and ids differ per rank. A call
/// that the harness skips (a buffer too large to allocate) is skipped by
/// every rank, agreed with moecommAllReduceSum.
class Session {
public:
  Session(Input &in, moecommThreadGroup_t group, int rank, int ranks,
          int ranksPerNode)
      : in_(in), group_(group), rank_(rank), W_(ranks), G_(ranksPerNode) {}

  bool open() {
    if (moecommCommInitThreadRank(&comm_, group_, rank_) != moecommSuccess)
      return false;
    moecommCompiledBind(comm_);
    return true;
  }

  ~Session() {
    for (Pending &p : pending_)
      moecommWait(p.request);
    for (moecommLayout_t l : layouts_)
      moecommLayoutDestroy(l);
    for (void *l : compiledLayouts_)
      moecomm_rt_layout_release(l);
    if (comm_)
      moecommCommDestroy(comm_);
  }

  void step() {
    switch (in_.u8() % 16) {
    case 0:
    case 1:
      return layoutCreate();
    case 2:
      return layoutQueries();
    case 3:
    case 4:
      return dispatch();
    case 5:
      return combine();
    case 6:
      return staged();
    case 7:
      return allToAll();
    case 8:
      return fp8();
    case 9:
      return misc();
    case 10:
      return waitOne();
    case 11:
      return destroyOne();
    case 12:
    case 13:
      return compiledLayout();
    case 14:
      return compiledCalls();
    default:
      return nccl();
    }
  }

private:
  /// Whether any rank skips the current call.
  bool agreedSkip(bool mine) {
    int64_t v = mine ? 1 : 0;
    if (moecommAllReduceSum(comm_, &v, 1) != moecommSuccess)
      __builtin_trap(); // a healthy communicator sums one value
    return v > 0;
  }

  moecommLayout_t anyLayout() {
    if (layouts_.empty() || in_.chance(16))
      return nullptr;
    return layouts_[in_.u8() % layouts_.size()];
  }

  void layoutCreate() {
    if (layouts_.size() >= 4)
      return;
    Routing r;
    makeRouting(in_, rank_, r);
    moecommLayout_t l = nullptr;
    const bool nullDesc = in_.chance(32), nullOut = in_.chance(32);
    moecommResult_t res = moecommLayoutCreate(comm_, nullDesc ? nullptr
                                                              : &r.desc,
                                              nullOut ? nullptr : &l);
    checkResult(res);
    if (res == moecommSuccess && l)
      layouts_.push_back(l);
  }

  void layoutQueries() {
    moecommLayout_t l = anyLayout();
    moecommLayoutInfo_t unused;
    checkResult(moecommLayoutGetInfo(l, in_.chance(16) ? nullptr : &unused));
    if (!l)
      return;
    const moecommLayoutInfo_t info = infoOf(l); // sizes the buffers below
    std::vector<int64_t> tpe(std::max<int64_t>(info.localExperts, 1));
    std::vector<float> w(std::max<int64_t>(info.recvRows, 1));
    std::vector<int64_t> src(2 * std::max<int64_t>(info.recvRows, 1));
    checkResult(moecommLayoutTokensPerExpert(l, tpe.data()));
    std::vector<int64_t> offsets(info.localExperts + 1);
    checkResult(moecommLayoutExpertOffsets(l, in_.chance(8) ? nullptr
                                                            : offsets.data()));
    checkResult(
        moecommLayoutRecvWeights(l, in_.chance(8) ? nullptr : w.data()));
    checkResult(
        moecommLayoutRecvSources(l, in_.chance(8) ? nullptr : src.data()));
    moecommScope_t scope;
    int64_t s = 0, rr = 0;
    checkResult(moecommLayoutStage(
        l, static_cast<moecommDirection_t>(enumValue(in_, 2)),
        in_.raw<int8_t>(), &scope, &s, &rr));
  }

  /// Info of `l` (zeros for NULL).
  moecommLayoutInfo_t infoOf(moecommLayout_t l) {
    moecommLayoutInfo_t info{};
    if (l)
      moecommLayoutGetInfo(l, &info);
    return info;
  }

  int64_t hiddenSize() {
    const int64_t hs[] = {1, 2, 8, 127, 128, 129, 300};
    return in_.pick(hs);
  }

  int floatType() { return in_.chance(2) ? moecommFloat32 : moecommBfloat16; }
  /// One of the FP8 wire types.
  int fp8Type() {
    const int types[] = {moecommFloat8E4M3, moecommFloat8E4M3UE8M0,
                         moecommMxfp8};
    return types[in_.u8() % 3];
  }

  /// Runs a blocking call or starts it and keeps its buffers until waited.
  template <typename Call>
  void runOrStart(std::vector<std::unique_ptr<Block>> blocks, Call call) {
    if (in_.chance(2) || pending_.size() >= 4) {
      checkResult(call(nullptr));
      return;
    }
    Pending p;
    p.blocks = std::move(blocks);
    moecommResult_t res = call(&p.request);
    checkResult(res);
    if (p.request)
      pending_.push_back(std::move(p));
  }

  void dispatch() {
    moecommLayout_t l = anyLayout();
    moecommLayoutInfo_t info = infoOf(l);
    const int64_t H = hiddenSize();
    const int type = floatType();
    auto x = std::make_unique<Block>(), recv = std::make_unique<Block>();
    const bool okX = makeBlock(in_, info.numTokens, H, type, *x);
    const bool okRecv = makeBlock(in_, info.recvRows, H, type, *recv);
    if (agreedSkip(!okX || !okRecv))
      return;
    auto wire = static_cast<moecommDataType_t>(
        in_.chance(2) ? type : enumValue(in_, moecommMxfp8));
    const moecommRows_t *xr = &x->rows;
    moecommRows_t *rr = &recv->rows;
    std::vector<std::unique_ptr<Block>> blocks;
    blocks.push_back(std::move(x));
    blocks.push_back(std::move(recv));
    runOrStart(std::move(blocks), [&](moecommRequest_t *req) {
      return moecommDispatchStart(comm_, l, xr, wire, rr, nullptr, req);
    });
  }

  void combine() {
    moecommLayout_t l = anyLayout();
    moecommLayoutInfo_t info = infoOf(l);
    const int64_t H = hiddenSize();
    const int type = floatType();
    auto y = std::make_unique<Block>(), out = std::make_unique<Block>();
    const bool okY = makeBlock(in_, info.recvRows, H, type, *y);
    const bool okOut = makeBlock(in_, info.numTokens, H, type, *out);
    if (agreedSkip(!okY || !okOut))
      return;
    const int weighted = in_.chance(2) ? 1 : in_.raw<int32_t>();
    const moecommRows_t *yr = &y->rows;
    moecommRows_t *orow = &out->rows;
    std::vector<std::unique_ptr<Block>> blocks;
    blocks.push_back(std::move(y));
    blocks.push_back(std::move(out));
    runOrStart(std::move(blocks), [&](moecommRequest_t *req) {
      return moecommCombineStart(comm_, l, yr, weighted, orow, nullptr, req);
    });
  }

  /// Rows of stage `stage` of `dir` (0 when there is no such stage).
  void stageRows(moecommLayout_t l, moecommDirection_t dir, int stage,
                 int64_t &send, int64_t &recv) {
    moecommScope_t scope;
    send = recv = 0;
    if (l && moecommLayoutStage(l, dir, stage, &scope, &send, &recv) !=
                 moecommSuccess)
      send = recv = 0;
  }

  /// Pack / exchange / unpack with fuzzed direction and stage, with blocks
  /// sized for that stage (when it exists).
  void staged() {
    moecommLayout_t l = anyLayout();
    const moecommLayoutInfo_t info = infoOf(l);
    const auto dir = static_cast<moecommDirection_t>(enumValue(in_, 2));
    const int stage = in_.chance(2) ? in_.u8() % 3 : in_.raw<int8_t>();
    const bool disp = dir == moecommDirectionDispatch;
    // The first input and the last output of the direction.
    const int64_t first = disp ? info.numTokens : info.recvRows;
    const int64_t last = disp ? info.recvRows : info.numTokens;
    int64_t send = 0, recv = 0, prevRecv = first, lastRecv = first, unused;
    stageRows(l, dir, stage, send, recv);
    if (stage > 0)
      stageRows(l, dir, stage - 1, unused, prevRecv);
    if (info.numStages > 0)
      stageRows(l, dir, info.numStages - 1, unused, lastRecv);
    const int op = in_.u8() % 3;
    const int64_t H = hiddenSize();
    const int type = floatType();
    const int outType = in_.chance(4) ? fp8Type() : type;
    const int64_t wantA[] = {prevRecv, send, lastRecv};
    const int64_t wantB[] = {send, recv, last};
    Block a, b;
    const bool okA = makeBlock(in_, wantA[op], H, op == 1 ? outType : type, a);
    const bool okB = makeBlock(in_, wantB[op], H, op == 0 ? outType : type, b);
    const int weighted = in_.u8() % 2;
    if (agreedSkip(!okA || !okB))
      return;
    switch (op) {
    case 0:
      checkResult(moecommPack(comm_, l, dir, stage, &a.rows, weighted, &b.rows,
                              nullptr));
      break;
    case 1:
      checkResult(
          moecommExchange(comm_, l, dir, stage, &a.rows, &b.rows, nullptr));
      break;
    default:
      checkResult(
          moecommUnpack(comm_, l, dir, &a.rows, weighted, &b.rows, nullptr));
    }
  }

  void allToAll() {
    std::vector<int64_t> send(W_), learnt(W_, -7);
    for (int d = 0; d < W_; ++d)
      send[d] = (in_.u8() + rank_ * 3 + d) % 5;
    if (const bool odd = in_.chance(8); odd)
      send[in_.u8() % W_] = in_.pick(kOddSizes);
    checkResult(moecommAllToAllCounts(
        comm_, in_.chance(16) ? nullptr : send.data(), learnt.data()));
    std::vector<int64_t> recv = learnt;
    if (const bool odd = in_.chance(8); odd)
      recv[in_.u8() % W_] = in_.pick(kOddSizes);
    // Row counts as the runtime must see them (a sum that overflows or a
    // negative count: the call must fail, the blocks are never used).
    auto total = [](const std::vector<int64_t> &counts) {
      int64_t t = 0;
      for (int64_t c : counts)
        if (c < 0 || __builtin_add_overflow(t, c, &t))
          return int64_t(-1);
      return t;
    };
    const int64_t H = hiddenSize();
    const int type = in_.chance(4) ? fp8Type() : floatType();
    auto s = std::make_unique<Block>(), r = std::make_unique<Block>();
    const bool okS = makeBlock(in_, total(send), H, type, *s);
    const bool okR = makeBlock(in_, total(recv), H, type, *r);
    if (agreedSkip(!okS || !okR))
      return;
    const moecommRows_t *sr = &s->rows;
    moecommRows_t *rr = &r->rows;
    std::vector<std::unique_ptr<Block>> blocks;
    blocks.push_back(std::move(s));
    blocks.push_back(std::move(r));
    // The start call copies the counts; only the rows stay in use.
    runOrStart(std::move(blocks), [&](moecommRequest_t *req) {
      return moecommAllToAllStart(comm_, sr, send.data(), rr, recv.data(),
                                  nullptr, req);
    });
  }

  void fp8() {
    const int64_t T = in_.u8() % 5, H = hiddenSize();
    Block a, b;
    const bool quantize = in_.chance(2);
    const int wide = floatType();
    const int narrow = fp8Type();
    const bool okA = makeBlock(in_, T, H, quantize ? wide : narrow, a);
    const bool okB = makeBlock(in_, T, H, quantize ? narrow : wide, b);
    const bool nullOut = in_.chance(32);
    if (!okA || !okB) // local calls: no rank waits for this one
      return;
    if (quantize)
      checkResult(moecommQuantizeFp8(&a.rows, nullOut ? nullptr : &b.rows));
    else
      checkResult(moecommDequantizeFp8(&a.rows, &b.rows));
  }

  void misc() {
    switch (in_.u8() % 8) {
    case 0: {
      const char *s = moecommGetErrorString(
          static_cast<moecommResult_t>(in_.raw<int32_t>()));
      if (!s || !*s)
        __builtin_trap(); // documented: never NULL
      break;
    }
    case 1: {
      int64_t count = in_.u8() % 9;
      if (in_.chance(4)) {
        const int64_t odd[] = {-1, INT64_MIN, INT64_MAX, (int64_t(1) << 24) + 1};
        count = in_.pick(odd);
      }
      int64_t values[8];
      for (int64_t &v : values)
        v = in_.chance(2) ? in_.raw<int64_t>() : in_.u8();
      checkResult(moecommAllReduceSum(comm_, in_.chance(16) ? nullptr : values,
                                      count));
      break;
    }
    case 2: {
      moecommTraffic_t t;
      checkResult(moecommCommGetTraffic(comm_, in_.u8() % 2,
                                        in_.chance(16) ? nullptr : &t));
      checkResult(moecommCommResetTraffic(comm_));
      break;
    }
    case 3: {
      moecommLinkModel_t m{in_.raw<double>(), in_.raw<double>(),
                           in_.raw<double>(), in_.raw<double>()};
      if (in_.chance(2))
        m = moecommLinkModel_t{1e-6, 1e9 * (1 + in_.u8()), 5e-6,
                               1e8 * (1 + in_.u8())};
      checkResult(moecommCommSetLinkModel(comm_, in_.chance(16) ? nullptr : &m));
      break;
    }
    case 4:
      checkResult(moecommBarrier(comm_));
      break;
    case 5: {
      int v;
      moecommBackend_t b;
      checkResult(moecommCommRank(comm_, in_.chance(4) ? nullptr : &v));
      checkResult(moecommCommSize(comm_, in_.chance(4) ? nullptr : &v));
      checkResult(moecommCommRanksPerNode(comm_, in_.chance(4) ? nullptr : &v));
      checkResult(moecommCommBackend(comm_, in_.chance(4) ? nullptr : &b));
      break;
    }
    case 6: {
      // Argument checks of calls that need no communicator.
      moecommThreadGroup_t g = nullptr;
      if (moecommThreadGroupCreate(in_.raw<int8_t>(), in_.raw<int8_t>(), &g) ==
          moecommSuccess)
        checkResult(moecommThreadGroupDestroy(g));
      moecommComm_t c = nullptr;
      checkResult(moecommCommInitThreadRank(&c, nullptr, 0));
      // Ranks outside [0, W) (valid ones have joined already).
      checkResult(moecommCommInitThreadRank(
          &c, group_, in_.chance(2) ? -1 - in_.u8() : W_ + in_.u8()));
      checkResult(moecommWait(nullptr));
      checkResult(moecommLayoutDestroy(nullptr));
      break;
    }
    default:
      checkResult(moecommCommGetLastError(nullptr) ? moecommSuccess
                                                   : moecommInternalError);
    }
  }

  void waitOne() {
    if (pending_.empty())
      return;
    const size_t i = in_.u8() % pending_.size();
    checkResult(moecommWait(pending_[i].request));
    pending_.erase(pending_.begin() + i);
  }

  void destroyOne() {
    // Only once nothing is in flight (the ABI's contract).
    if (layouts_.empty() || !pending_.empty())
      return;
    const size_t i = in_.u8() % layouts_.size();
    checkResult(moecommLayoutDestroy(layouts_[i]));
    layouts_.erase(layouts_.begin() + i);
  }

  //--- moecomm_compiled.h ------------------------------------------------

  static moecommMemRef2D ref2(void *p, int64_t rows, int64_t cols) {
    return moecommMemRef2D{p, p, 0, {rows, cols}, {cols, 1}};
  }
  static moecommMemRef1D ref1(void *p, int64_t n) {
    return moecommMemRef1D{p, p, 0, {n}, {1}};
  }

  void compiledLayout() {
    if (in_.chance(8))
      moecommCompiledBind(comm_); // clears a recorded error
    if (compiledLayouts_.size() >= 4)
      return;
    Routing r;
    makeRouting(in_, rank_, r);
    const int64_t T = r.ids64.size() / std::max(1, r.desc.topk);
    const int64_t K = r.desc.topk;
    // Descriptors always describe their buffer (K differs per rank when
    // one rank's K is INT_MAX).
    if (agreedSkip(r.desc.numTokens != T || K < 1 || K > 4))
      return;
    moecommMemRef2D idx = ref2(r.ids64.data(), T, K);
    moecommMemRef2D idx32 = ref2(r.ids32.data(), T, K);
    moecommMemRef2D w = ref2(r.weights.data(), T, K);
    if (in_.chance(8))
      w.sizes[1] = std::max<int64_t>(K - 1, 0); // a smaller matching view
    const int64_t ranks = in_.chance(8) ? in_.raw<int8_t>() : W_;
    const int64_t perNode = in_.chance(8) ? in_.raw<int8_t>() : G_;
    void *l = in_.chance(2)
                  ? _mlir_ciface_moecomm_rt_layout_i64(
                        &idx, &w, ranks, perNode, r.desc.numExperts,
                        r.desc.strategy, r.desc.capacity, r.desc.hidden,
                        in_.chance(2) ? in_.u8() % 3 : in_.raw<int32_t>(),
                        r.desc.align, r.desc.numSlots, r.desc.slotExperts,
                        r.desc.replicaChoice)
                  : _mlir_ciface_moecomm_rt_layout_i32(
                        &idx32, &w, ranks, perNode, r.desc.numExperts,
                        r.desc.strategy, r.desc.capacity, r.desc.hidden,
                        in_.u8() % 3, r.desc.align, r.desc.numSlots,
                        r.desc.slotExperts, r.desc.replicaChoice);
    if (l)
      compiledLayouts_.push_back(l);
  }

  void compiledCalls() {
    void *l = compiledLayouts_.empty() || in_.chance(16)
                  ? nullptr
                  : compiledLayouts_[in_.u8() % compiledLayouts_.size()];
    moecommLayoutInfo_t info = infoOf(static_cast<moecommLayout_t>(l));
    const int64_t H = 1 + in_.u8() % 200;
    // Output buffers: real ones, or NULL as after a failed malloc.
    const bool failedAlloc = in_.chance(8);
    switch (in_.u8() % 8) {
    case 0:
      (void)moecomm_rt_rows(l, in_.chance(2) ? in_.u8() % 2 : in_.raw<int32_t>(),
                            in_.raw<int8_t>(), in_.u8() % 2);
      break;
    case 1: {
      std::vector<int64_t> tpe(std::max<int64_t>(info.localExperts, 1));
      moecommMemRef1D m =
          ref1(failedAlloc ? nullptr : tpe.data(), info.localExperts);
      _mlir_ciface_moecomm_rt_tokens_per_expert(l, &m);
      std::vector<float> w(std::max<int64_t>(info.recvRows, 1));
      moecommMemRef1D mw = ref1(failedAlloc ? nullptr : w.data(), info.recvRows);
      _mlir_ciface_moecomm_rt_recv_weights(l, &mw);
      break;
    }
    case 2:
    case 3: {
      std::vector<float> x(std::max<int64_t>(info.numTokens * H, 1), 0.5f);
      std::vector<float> recv(std::max<int64_t>(info.recvRows * H, 1));
      moecommMemRef2D xr = ref2(x.data(), info.numTokens, H);
      moecommMemRef2D rr =
          ref2(failedAlloc ? nullptr : recv.data(), info.recvRows, H);
      _mlir_ciface_moecomm_rt_dispatch_f32(
          l, in_.chance(2) ? 0 : in_.raw<int32_t>(), &xr, &rr);
      moecommMemRef2D yr = ref2(recv.data(), info.recvRows, H);
      moecommMemRef2D outr =
          ref2(failedAlloc ? nullptr : x.data(), info.numTokens, H);
      _mlir_ciface_moecomm_rt_combine_f32(l, in_.raw<int32_t>(), &yr, &outr);
      break;
    }
    case 4: {
      std::vector<float> a(std::max<int64_t>(info.numTokens * H, 1), 1.0f);
      std::vector<float> b(std::max<int64_t>(info.recvRows * H, 1));
      moecommMemRef2D ar = ref2(a.data(), info.numTokens, H);
      moecommMemRef2D br =
          ref2(failedAlloc ? nullptr : b.data(), info.recvRows, H);
      _mlir_ciface_moecomm_rt_gather_f32_f32(
          l, in_.chance(2) ? 0 : in_.raw<int32_t>(),
          in_.chance(2) ? -1 : in_.raw<int8_t>(), in_.u8() % 2, &ar, &br);
      _mlir_ciface_moecomm_rt_exchange_f32(l, in_.raw<int32_t>(),
                                           in_.raw<int8_t>(), &ar, &br);
      break;
    }
    case 5: {
      const int64_t T = in_.u8() % 4;
      std::vector<float> x(std::max<int64_t>(T * H, 1));
      for (float &v : x)
        v = in_.chance(4) ? in_.raw<float>() : in_.u8() - 128.0f;
      std::vector<uint8_t> q(std::max<int64_t>(T * H, 1));
      const int64_t nb = (H + 127) / 128;
      std::vector<float> s(std::max<int64_t>(T * nb, 1));
      std::vector<uint16_t> back(std::max<int64_t>(T * H, 1));
      moecommMemRef2D xr = ref2(x.data(), T, H);
      moecommMemRef2D qr = ref2(failedAlloc ? nullptr : q.data(), T, H);
      moecommMemRef2D sr = ref2(s.data(), T, nb);
      _mlir_ciface_moecomm_rt_quantize_f32(&xr, &qr, &sr);
      qr = ref2(q.data(), T, H);
      moecommMemRef2D br = ref2(back.data(), T, H);
      _mlir_ciface_moecomm_rt_dequantize_bf16(&qr, &sr, &br);
      break;
    }
    case 6: {
      std::vector<int64_t> send(W_), recv(W_);
      for (int d = 0; d < W_; ++d)
        send[d] = (in_.u8() + rank_) % 5;
      if (const bool odd = in_.chance(4); odd)
        send[0] = in_.raw<int64_t>();
      moecommMemRef1D sm = ref1(send.data(), W_);
      moecommMemRef1D rm = ref1(failedAlloc ? nullptr : recv.data(), W_);
      (void)_mlir_ciface_moecomm_rt_all_to_all_counts_i64(
          in_.chance(8) ? in_.raw<int8_t>() : W_, G_, &sm, &rm);
      break;
    }
    default: {
      moecommCompiledStats_t stats;
      if (moecommCompiledGetStats(&stats) != moecommSuccess)
        __builtin_trap();
      if (moecommCompiledStatus() != moecommSuccess &&
          !*moecommCompiledLastError())
        __builtin_trap(); // a recorded error always has a message
      if (in_.chance(4))
        moecommCompiledBind(comm_);
    }
    }
  }

  //--- moecomm_nccl.h on a threads communicator ------------------------------

  void nccl() {
    Block a, b;
    const int64_t T = in_.u8() % 3, H = hiddenSize();
    const bool okA = makeBlock(in_, T, H, floatType(), a);
    const bool okB = makeBlock(in_, T, H, moecommFloat8E4M3, b);
    if (agreedSkip(!okA || !okB))
      return;
    checkResult(moecommQuantizeFp8Device(comm_, &a.rows, &b.rows, nullptr));
    checkResult(moecommDequantizeFp8Device(comm_, &b.rows, &a.rows, nullptr));
    moecommCapacityDesc_t d{};
    d.numTokens = in_.raw<int64_t>();
    d.topk = in_.raw<int32_t>();
    d.numExperts = in_.raw<int64_t>();
    d.capacity = in_.raw<int64_t>();
    d.pairCapacity = in_.raw<int64_t>();
    d.hidden = in_.raw<int64_t>();
    d.idxType = static_cast<moecommDataType_t>(enumValue(in_, moecommInt64));
    d.dataType = static_cast<moecommDataType_t>(enumValue(in_, moecommInt64));
    d.wireType = static_cast<moecommDataType_t>(enumValue(in_, moecommInt64));
    moecommCapacityPlan_t plan = nullptr;
    checkResult(moecommCapacityPlanCreate(comm_, &d, &plan));
    int dev;
    checkResult(moecommCommCudaDevice(comm_, &dev));
  }

  /// Every failure must come with a message (moecomm.h: "every failure is
  /// a moecommResult_t plus a message").
  void checkResult(moecommResult_t r) {
    if (r == moecommSuccess)
      return;
    if (static_cast<int>(r) < 0 || r >= moecommNumResults)
      __builtin_trap(); // not a documented result
    const char *comm = moecommCommGetLastError(comm_);
    const char *thread = moecommCommGetLastError(nullptr);
    if (!comm || !thread || (!*comm && !*thread))
      __builtin_trap();
  }

  Input &in_;
  moecommThreadGroup_t group_;
  const int rank_, W_, G_;
  moecommComm_t comm_ = nullptr;
  std::vector<moecommLayout_t> layouts_;
  std::vector<void *> compiledLayouts_;
  std::vector<Pending> pending_;
};

/// Seeds: short programs starting with each kind of call (layouts first),
/// for each topology; libFuzzer's coverage feedback takes it from there.
void writeSeeds(const char *dir) {
  const std::vector<std::vector<uint8_t>> programs = {
      // layout (T=4, K=2, E=4, ...), info, dispatch, combine, wait, destroy
      {0, 4, 1, 3, 1, 2, 1, 0, 3, 2, 1, 0, 3, 1, 2, 1, 1, 2, 2, 1, 1,
       1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0, 3, 0, 1, 1, 1, 1, 1, 1, 1, 1,
       5, 0, 1, 1, 1, 1, 1, 1, 1, 1, 10, 0, 11, 0},
      // compiled layout, then compiled calls of each kind
      {12, 3, 1, 2, 0, 1, 2, 0, 1, 1, 1, 1, 1, 1, 1, 1, 14, 1, 1, 0, 1,
       14, 2, 1, 1, 1, 14, 5, 2, 3, 1, 1, 1, 14, 7, 1},
      // all_to_all, fp8, misc, nccl
      {7, 2, 1, 1, 1, 1, 1, 1, 1, 8, 2, 3, 0, 1, 1, 1, 1, 1, 1, 9, 1,
       3, 1, 1, 2, 3, 9, 0, 255, 255, 255, 255, 15, 1, 1, 1, 1, 1, 1, 1}};
  for (uint8_t topology = 0; topology < 4; ++topology)
    for (size_t i = 0; i < programs.size(); ++i) {
      std::string path = std::string(dir) + "/seed-" +
                         std::to_string(topology) + "-" + std::to_string(i);
      if (FILE *f = std::fopen(path.c_str(), "wb")) {
        std::fputc(topology, f);
        std::fwrite(programs[i].data(), 1, programs[i].size(), f);
        std::fclose(f);
      }
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  for (int i = 1; i < *argc; ++i)
    if (std::strncmp((*argv)[i], "-write_seeds=", 13) == 0) {
      writeSeeds((*argv)[i] + 13);
      std::exit(0);
    }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  // The first byte chooses the ranks (threads) and ranks per node.
  const int topologies[][2] = {{1, 1}, {2, 1}, {2, 2}, {4, 2}};
  const int W = topologies[data[0] % 4][0], G = topologies[data[0] % 4][1];
  moecommThreadGroup_t group = nullptr;
  if (moecommThreadGroupCreate(W, G, &group) != moecommSuccess)
    __builtin_trap();
  auto runRank = [&](int rank) {
    Input in(data + 1, size - 1);
    Session session(in, group, rank, W, G);
    if (!session.open())
      __builtin_trap(); // the threads backend always makes a communicator
    for (int steps = 0; steps < 64 && !in.empty(); ++steps)
      session.step();
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < W; ++r)
    threads.emplace_back(runRank, r);
  runRank(0);
  for (std::thread &t : threads)
    t.join();
  if (moecommThreadGroupDestroy(group) != moecommSuccess)
    __builtin_trap();
  return 0;
}
