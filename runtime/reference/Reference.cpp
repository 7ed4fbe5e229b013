//===- Reference.cpp - Single-process oracle for dispatch/combine ---------===//
//
// Simple loops over all tokens of all ranks; see Reference.h. Written apart
// from the runtime's plan builder and FP8 code on purpose.
//
//===----------------------------------------------------------------------===//
#include "moecomm/Reference/Reference.h"
#include "moecomm/Model/Limits.h"
#include "moecomm/Model/Placement.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

namespace moecomm {
namespace ref {

namespace {
std::string rankPrefix(int r) { return "rank " + std::to_string(r); }
} // namespace

std::string validate(const Problem &p, moecommResult_t *code) {
  if (code)
    *code = moecommSuccess;
  auto fail = [&](std::string msg) {
    if (code)
      *code = moecommInvalidArgument;
    return msg;
  };
  if (p.ranks < 1 || p.ranksPerNode < 1 || p.ranks % p.ranksPerNode != 0)
    return fail("invalid topology: " + std::to_string(p.ranks) + " ranks, " +
                std::to_string(p.ranksPerNode) + " per node");
  if ((int)p.routing.size() != p.ranks)
    return fail("routing has " + std::to_string(p.routing.size()) +
                " ranks, expected " + std::to_string(p.ranks));
  // Every rank checks the same things in the same order; the lowest failing
  // rank's first error wins.
  for (int r = 0; r < p.ranks; ++r) {
    const RankRouting &rr = p.routing[r];
    if (!isValidAlign(p.align))
      return fail(rankPrefix(r) + ": align " + std::to_string(p.align) +
                  " is not a power of two in [1, " + std::to_string(kMaxAlign) +
                  "]");
    if (p.hasPlacement() && p.replicaChoice != moecommReplicaLocality &&
        p.replicaChoice != moecommReplicaLoadOnly)
      return fail(rankPrefix(r) + ": unknown replica choice " +
                  std::to_string((int)p.replicaChoice));
    if (p.topk < 1)
      return fail(rankPrefix(r) + ": topk must be >= 1, got " +
                  std::to_string(p.topk));
    if (p.numExperts < 1)
      return fail(rankPrefix(r) + ": num_experts must be >= 1, got " +
                  std::to_string(p.numExperts));
    if (p.numExperts > INT32_MAX)
      return fail(rankPrefix(r) + ": num_experts " +
                  std::to_string(p.numExperts) + " does not fit in 31 bits");
    if (rr.numTokens < 0)
      return fail(rankPrefix(r) + ": num_tokens must be >= 0, got " +
                  std::to_string(rr.numTokens));
    // The runtime's size rule (moecomm/Model/Sizes.h, same message): the
    // [T][K] ids as 8-byte elements fit in int64, so T * K below does too.
    int64_t ids = 0;
    if (__builtin_mul_overflow(std::max<int64_t>(rr.numTokens, 1), p.topk,
                               &ids) ||
        ids > INT64_MAX / 8)
      return fail(rankPrefix(r) + ": num_tokens " +
                  std::to_string(rr.numTokens) + " x topk " +
                  std::to_string(p.topk) +
                  " ids are more bytes than memory holds");
    if (p.capacity < 0)
      return fail(rankPrefix(r) + ": capacity must be >= 0, got " +
                  std::to_string(p.capacity));
    // With a placement the slots are what the ranks split (checkPlacement).
    if (!p.hasPlacement() && p.numExperts % p.ranks != 0)
      return fail("num_experts " + std::to_string(p.numExperts) +
                  " is not divisible by " + std::to_string(p.ranks) + " ranks");
    if ((int64_t)rr.topkIdx.size() != rr.numTokens * p.topk)
      return fail(rankPrefix(r) + ": topk_idx has " +
                  std::to_string(rr.topkIdx.size()) + " entries, expected " +
                  std::to_string(rr.numTokens * p.topk));
    if (!rr.topkWeights.empty() &&
        (int64_t)rr.topkWeights.size() != rr.numTokens * p.topk)
      return fail(rankPrefix(r) + ": topk_weights has " +
                  std::to_string(rr.topkWeights.size()) +
                  " entries, expected " +
                  std::to_string(rr.numTokens * p.topk));
    for (int64_t t = 0; t < rr.numTokens; ++t) {
      for (int k = 0; k < p.topk; ++k) {
        int64_t e = rr.topkIdx[t * p.topk + k];
        if (e < -1 || e >= p.numExperts)
          return fail(rankPrefix(r) + " token " + std::to_string(t) + " slot " +
                      std::to_string(k) + ": expert id " + std::to_string(e) +
                      " out of range [-1, " + std::to_string(p.numExperts) +
                      ")");
        if (e == -1)
          continue;
        for (int j = 0; j < k; ++j)
          if (rr.topkIdx[t * p.topk + j] == e)
            return fail(rankPrefix(r) + " token " + std::to_string(t) +
                        ": expert id " + std::to_string(e) +
                        " appears in slots " + std::to_string(j) + " and " +
                        std::to_string(k));
      }
    }
    if (p.hasPlacement()) {
      ExpertPlacement placement{p.numExperts, p.slotExperts};
      std::string msg = checkPlacement(placement, p.ranks);
      if (!msg.empty())
        return fail(rankPrefix(r) + ": " + msg);
    }
  }
  return "";
}

Problem physicalProblem(const Problem &p) {
  if (!p.hasPlacement())
    return p;
  Problem q = p;
  const ReplicaTable table(ExpertPlacement{p.numExperts, p.slotExperts},
                           p.ranks, p.ranksPerNode);
  for (int r = 0; r < p.ranks; ++r) {
    const RankRouting &rr = p.routing[r];
    RoutingView logical;
    logical.numTokens = rr.numTokens;
    logical.topk = p.topk;
    logical.topkIdx = rr.topkIdx.data();
    chooseReplicas(table, p.replicaChoice, r, logical,
                   q.routing[r].topkIdx.data());
  }
  q.numExperts = (int64_t)p.slotExperts.size();
  q.slotExperts.clear();
  return q;
}

std::vector<RankLayout> layout(const Problem &logical) {
  const Problem p = physicalProblem(logical);
  const int W = p.ranks;
  const int64_t L = p.localExperts();
  const int K = p.topk;
  std::vector<RankLayout> out(W);
  // Gather every pair per destination rank in (source rank, source token,
  // expert id) order: this is the capacity keep order.
  struct Pair {
    int64_t s, t, e;
    int k;
    float w;
  };
  std::vector<std::vector<Pair>> incoming(W);
  for (int s = 0; s < W; ++s) {
    const RankRouting &rr = p.routing[s];
    for (int64_t t = 0; t < rr.numTokens; ++t) {
      std::vector<Pair> tok;
      for (int k = 0; k < K; ++k) {
        int64_t e = rr.topkIdx[t * K + k];
        if (e < 0)
          continue;
        float w = rr.topkWeights.empty() ? 1.0f : rr.topkWeights[t * K + k];
        tok.push_back({s, t, e, k, w});
      }
      std::sort(tok.begin(), tok.end(),
                [](const Pair &a, const Pair &b) { return a.e < b.e; });
      for (const Pair &pr : tok)
        incoming[pr.e / L].push_back(pr);
    }
  }
  for (int d = 0; d < W; ++d) {
    std::vector<Pair> &in = incoming[d];
    // Already in (s, t, e) order by construction; sort anyway to make the
    // definition explicit.
    std::sort(in.begin(), in.end(), [](const Pair &a, const Pair &b) {
      return std::make_tuple(a.s, a.t, a.e) < std::make_tuple(b.s, b.t, b.e);
    });
    int64_t keep = (int64_t)in.size();
    if (p.capacity > 0 && keep > p.capacity)
      keep = p.capacity;
    out[d].dropped = (int64_t)in.size() - keep;
    in.resize(keep);
    out[d].tokensPerExpert.assign(L, 0);
    for (const Pair &pr : in) {
      out[d].rows.push_back({pr.e - d * L, pr.s, pr.t, pr.k, pr.w});
      out[d].tokensPerExpert[pr.e - d * L]++;
    }
    std::sort(out[d].rows.begin(), out[d].rows.end(),
              [](const RecvRow &a, const RecvRow &b) {
                return std::make_tuple(a.localExpert, a.srcRank, a.srcToken) <
                       std::make_tuple(b.localExpert, b.srcRank, b.srcToken);
              });
    // Each expert's segment: its real rows, then padding rows until the
    // segment's size is a multiple of align.
    std::vector<RecvRow> padded;
    out[d].expertOffsets.assign(1, 0);
    size_t i = 0;
    for (int64_t e = 0; e < L; ++e) {
      for (; i < out[d].rows.size() && out[d].rows[i].localExpert == e; ++i)
        padded.push_back(out[d].rows[i]);
      while ((int64_t)padded.size() % p.align != 0)
        padded.push_back({e, -1, -1, -1, 0.0f});
      out[d].expertOffsets.push_back((int64_t)padded.size());
    }
    out[d].rows = std::move(padded);
  }
  return out;
}

std::vector<std::vector<bool>> keptSlots(const Problem &p,
                                         const std::vector<RankLayout> &l) {
  std::vector<std::vector<bool>> kept(p.ranks);
  for (int r = 0; r < p.ranks; ++r)
    kept[r].assign(p.routing[r].numTokens * p.topk, false);
  for (const RankLayout &rl : l)
    for (const RecvRow &row : rl.rows)
      if (!row.isPadding())
        kept[row.srcRank][row.srcToken * p.topk + row.slot] = true;
  return kept;
}

std::vector<float> standardX(int rank, int64_t numTokens, int64_t hidden) {
  std::vector<float> x(numTokens * hidden);
  for (int64_t t = 0; t < numTokens; ++t)
    for (int64_t h = 0; h < hidden; ++h) {
      int64_t v = ((int64_t)rank * 977 + t * 131 + h * 7) % 255 - 127;
      x[t * hidden + h] = (float)v / 128.0f;
    }
  return x;
}

float roundTo(float v, moecommDataType_t type) {
  if (type != moecommBfloat16)
    return v;
  if (std::isnan(v))
    return v;
  uint32_t u;
  std::memcpy(&u, &v, 4);
  // Round to nearest even on the low 16 bits.
  uint32_t low = u & 0xFFFFu;
  uint32_t hi = u >> 16;
  if (low > 0x8000u || (low == 0x8000u && (hi & 1u)))
    hi += 1;
  u = hi << 16;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// --- Reference FP8 (e4m3fn) by table search ---------------------------------

float fp8Decode(uint8_t code) {
  int sign = code >> 7;
  int exp = (code >> 3) & 0xF;
  int man = code & 0x7;
  if (exp == 0xF && man == 0x7)
    return std::nanf("");
  double v;
  if (exp == 0)
    v = std::ldexp((double)man / 8.0, -6);
  else
    v = std::ldexp(1.0 + (double)man / 8.0, exp - 7);
  return (float)(sign ? -v : v);
}

uint8_t fp8Encode(float v) {
  if (std::isnan(v))
    return 0x7F;
  uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  double a = std::fabs((double)v);
  if (a >= 448.0)
    return sign | 0x7E;
  // Codes 0x00..0x7E are increasing in value: find the nearest by binary
  // search over their decoded values (a table built from fp8Decode, so this
  // stays independent of the runtime's bit manipulation), ties to the code
  // with an even mantissa (even code).
  static const std::array<double, 0x7F> values = [] {
    std::array<double, 0x7F> t{};
    for (int c = 0; c <= 0x7E; ++c)
      t[c] = fp8Decode((uint8_t)c);
    return t;
  }();
  uint8_t best = (uint8_t)(std::upper_bound(values.begin(), values.end(), a) -
                           values.begin() - 1);
  if (best < 0x7E) {
    double lo = values[best], hi = values[best + 1];
    if (a - lo > hi - a || (a - lo == hi - a && (best & 1)))
      best = (uint8_t)(best + 1);
  }
  return sign | best;
}

bool isFp8Wire(moecommDataType_t type) {
  return type == moecommFloat8E4M3 || type == moecommFloat8E4M3UE8M0 ||
         type == moecommMxfp8;
}

float fp8BlockScale(moecommDataType_t wire, float amax) {
  if (amax == 0.0f)
    return 1.0f;
  if (wire == moecommFloat8E4M3)
    return amax / 448.0f;
  int e = 127; // infinite amax
  if (std::isfinite(amax)) {
    int exp;
    // amax = m * 2^exp with m in [0.5, 1).
    double m = std::frexp((double)amax, &exp);
    if (wire == moecommMxfp8) {
      e = (exp - 1) - 8; // floor(log2(amax)) - emax(e4m3)
    } else {
      // 2^ceil(log2(amax / 448)): amax / 448 in double is a power of two
      // exactly when the real quotient is one (amax has 24 bits, 448 = 7 *
      // 2^6), so frexp's mantissa tells.
      m = std::frexp((double)amax / 448.0, &exp);
      e = m == 0.5 ? exp - 1 : exp;
    }
  }
  return std::ldexp(1.0f, std::min(127, std::max(-127, e)));
}

namespace {
// dequantize(quantize(row)) then round to dataType.
void fp8RoundTripRow(moecommDataType_t wire, const float *in, float *out,
                     int64_t H, moecommDataType_t dataType) {
  const int64_t block = wire == moecommMxfp8 ? 32 : 128;
  for (int64_t b0 = 0; b0 < H; b0 += block) {
    int64_t b1 = std::min<int64_t>(H, b0 + block);
    float amax = 0.0f;
    for (int64_t h = b0; h < b1; ++h)
      amax = std::max(amax, std::fabs(in[h]));
    float scale = fp8BlockScale(wire, amax);
    for (int64_t h = b0; h < b1; ++h) {
      float q = fp8Decode(fp8Encode(in[h] / scale));
      out[h] = roundTo(q * scale, dataType);
    }
  }
}
} // namespace

std::vector<std::vector<float>>
dispatch(const Problem &p, const std::vector<RankLayout> &l,
         const std::vector<std::vector<float>> &x) {
  const int64_t H = p.hidden;
  std::vector<std::vector<float>> out(p.ranks);
  std::vector<float> src(H);
  for (int d = 0; d < p.ranks; ++d) {
    out[d].resize(l[d].rows.size() * H);
    for (size_t i = 0; i < l[d].rows.size(); ++i) {
      const RecvRow &row = l[d].rows[i];
      float *o = &out[d][i * H];
      if (row.isPadding()) {
        std::fill(o, o + H, 0.0f);
        continue;
      }
      const float *xr = &x[row.srcRank][row.srcToken * H];
      for (int64_t h = 0; h < H; ++h)
        src[h] = roundTo(xr[h], p.dataType);
      if (isFp8Wire(p.wireType))
        fp8RoundTripRow(p.wireType, src.data(), o, H, p.dataType);
      else
        std::copy(src.begin(), src.end(), o);
    }
  }
  return out;
}

namespace {
// (rank, token, slot) -> (dest rank, row index) of every kept pair.
std::map<std::tuple<int64_t, int64_t, int>, std::pair<int, int64_t>>
rowIndex(const Problem &p, const std::vector<RankLayout> &l) {
  std::map<std::tuple<int64_t, int64_t, int>, std::pair<int, int64_t>> m;
  for (int d = 0; d < p.ranks; ++d)
    for (size_t i = 0; i < l[d].rows.size(); ++i) {
      const RecvRow &r = l[d].rows[i];
      if (!r.isPadding())
        m[{r.srcRank, r.srcToken, r.slot}] = {d, (int64_t)i};
    }
  return m;
}

/// The walk both combines make: `out` sized to every rank's [T][H] zeros,
/// then `visit(r, t, k, yRow, out[r])` for each kept slot k of token t of
/// rank r, in rank, token, slot order, where `yRow` is the slot's row of `y`
/// (masked and dropped slots are skipped).
template <typename T, typename Visit>
std::vector<std::vector<T>>
combineKeptSlots(const Problem &p, const std::vector<RankLayout> &l,
                 const std::vector<std::vector<float>> &y, Visit visit) {
  const int64_t H = p.hidden;
  auto idx = rowIndex(p, l);
  std::vector<std::vector<T>> out(p.ranks);
  for (int r = 0; r < p.ranks; ++r) {
    out[r].assign(p.routing[r].numTokens * H, T(0));
    for (int64_t t = 0; t < p.routing[r].numTokens; ++t)
      for (int k = 0; k < p.topk; ++k) {
        auto it = idx.find({r, t, k});
        if (it == idx.end())
          continue; // masked or dropped
        visit(r, t, k, &y[it->second.first][it->second.second * H], out[r]);
      }
  }
  return out;
}
} // namespace

std::vector<std::vector<float>>
combine(const Problem &p, const std::vector<RankLayout> &l,
        const std::vector<std::vector<float>> &y, bool weighted) {
  const int64_t H = p.hidden;
  const int K = p.topk;
  // Each token's f32 sum of its slots' rounded rows, in slot order, kept in
  // `out` until every slot is in, then rounded to the data type once.
  auto out = combineKeptSlots<float>(
      p, l, y,
      [&](int r, int64_t t, int k, const float *yr, std::vector<float> &o) {
        const RankRouting &rr = p.routing[r];
        float w = rr.topkWeights.empty() ? 1.0f : rr.topkWeights[t * K + k];
        float *acc = &o[t * H];
        for (int64_t h = 0; h < H; ++h) {
          float v = roundTo(yr[h], p.dataType);
          if (weighted) {
            float prod = w * v;
            acc[h] = acc[h] + prod;
          } else {
            acc[h] = acc[h] + v;
          }
        }
      });
  for (std::vector<float> &rows : out)
    for (float &v : rows)
      v = roundTo(v, p.dataType);
  return out;
}

std::vector<std::vector<double>>
combineAbsSum(const Problem &p, const std::vector<RankLayout> &l,
              const std::vector<std::vector<float>> &y, bool weighted) {
  const int64_t H = p.hidden;
  const int K = p.topk;
  return combineKeptSlots<double>(
      p, l, y,
      [&](int r, int64_t t, int k, const float *yr, std::vector<double> &o) {
        const RankRouting &rr = p.routing[r];
        double w = weighted && !rr.topkWeights.empty()
                       ? (double)rr.topkWeights[t * K + k]
                       : 1.0;
        for (int64_t h = 0; h < H; ++h)
          o[t * H + h] += std::fabs(w * (double)yr[h]);
      });
}

int64_t rowBytes(moecommDataType_t type, int64_t hidden) {
  switch (type) {
  case moecommFloat32:
  case moecommInt32:
    return 4 * hidden;
  case moecommBfloat16:
    return 2 * hidden;
  case moecommFloat8E4M3:
    return hidden + 4 * ((hidden + 127) / 128);
  case moecommFloat8E4M3UE8M0:
    return hidden + (hidden + 127) / 128;
  case moecommMxfp8:
    return hidden + (hidden + 31) / 32;
  case moecommInt64:
    return 8 * hidden;
  case moecommDataTypeMinEnum: // not a type
  case moecommDataTypeMaxEnum:
    break;
  }
  return 0;
}

int64_t interNodeLowerBoundBytes(const Problem &logical,
                                 const std::vector<RankLayout> &l,
                                 int64_t rowBytes) {
  const Problem p = physicalProblem(logical);
  auto kept = keptSlots(p, l);
  const int64_t perNode = (int64_t)p.ranksPerNode * p.localExperts();
  int64_t total = 0;
  for (int r = 0; r < p.ranks; ++r) {
    const RankRouting &rr = p.routing[r];
    int home = r / p.ranksPerNode;
    for (int64_t t = 0; t < rr.numTokens; ++t) {
      std::vector<int64_t> nodes;
      for (int k = 0; k < p.topk; ++k) {
        if (!kept[r][t * p.topk + k])
          continue;
        int64_t n = rr.topkIdx[t * p.topk + k] / perNode;
        if (n != home &&
            std::find(nodes.begin(), nodes.end(), n) == nodes.end())
          nodes.push_back(n);
      }
      total += (int64_t)nodes.size() * rowBytes;
    }
  }
  return total;
}

} // namespace ref
} // namespace moecomm
