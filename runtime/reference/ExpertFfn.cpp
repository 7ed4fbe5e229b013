//===- ExpertFfn.cpp - reference SwiGLU experts with error bounds ---------===//
//
// Error analysis, per row, first order in u = 2^-24 (f32's unit roundoff);
// A_v is the sum of |terms| of the dot product giving v. gamma_n is Higham
// and Mary's probabilistic bound of an n-term dot product in any order
// ("A New Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci.
// Comput. 41(5), 2019, Theorem 2.4): exp(lambda sqrt(n) u + n u^2 / (1 - u))
// - 1 with lambda = 8, which holds with probability at least
// 1 - 2 exp(-lambda^2 (1 - u)^2 / 2) > 1 - 3e-14 per dot product when the
// roundings are independent with mean zero; the worst case n u / (1 - n u)
// would hold always but is ~sqrt(n) times larger than any error seen, too
// loose to catch a wrong result of the size of the rounding.
//   forward:  dg = gamma_H A_g, du = gamma_H A_u,
//             dh = |u silu'(g)| dg + |silu(g)| du + 8 u |h|  (exp, +, /, *),
//             dd = gamma_I A_d + sum_j dh_j |W_down[j][k]|;
//   backward: dgh = gamma_H A_gh,
//             dgg = |u s'| dgh + |gh s'| du + |gh u s''| dg + 16 u |gg|,
//             dgu = |s| dgh + |gh s'| dg + 16 u |gu|,
//             din = gamma_2I A_in + sum_j (dgg_j |W_gate| + dgu_j |W_up|);
// and for the output rounded to the data type (unit roundoff u_o, smallest
// subnormal eta) by the graph and by the reference:
//   error = (1 + u_o) dv + (2 u_o + 2^-23) |v| + 2 eta.
//
//===----------------------------------------------------------------------===//

#include "moecomm/Reference/ExpertFfn.h"
#include "moecomm/Reference/ExpertWeights.h"

#include <algorithm>
#include <cmath>

namespace moecomm {
namespace ref {

namespace {

constexpr double kU = 0x1p-24;

constexpr double kLambda = 8;

double gamma(int64_t n) {
  const double dn = static_cast<double>(n);
  return std::expm1(kLambda * std::sqrt(dn) * kU + dn * kU * kU / (1 - kU));
}

struct OutputRounding {
  double unit, eta;
};

OutputRounding outputRounding(moecommDataType_t type) {
  if (type == moecommFloat32)
    return {0x1p-24, 0x1p-149};
  return {0x1p-8, 0x1p-133};
}

/// Rows a weight pass serves: each weight row is read once per block of
/// rows instead of once per row (the weights, 3 H I f32, do not fit in cache;
/// the rows' accumulators, ~10 (H + I) doubles each, do).
constexpr int64_t kBlockRows = 8;

/// g = x W_gate and u = x W_up with their |term| sums, for one row x [H].
struct GateUp {
  std::vector<double> g, ag, u, au;
};

/// gateUp of each row x[b] [H] of a block (each row's sums in the same order
/// as one row alone: h outer, j inner).
std::vector<GateUp> gateUp(const ExpertWeights &w,
                           const std::vector<const float *> &x) {
  const int64_t H = w.hidden, I = w.intermediate;
  std::vector<GateUp> r(x.size(),
                        GateUp{std::vector<double>(I), std::vector<double>(I),
                               std::vector<double>(I), std::vector<double>(I)});
  for (int64_t h = 0; h < H; ++h) {
    const float *wg = &w.gate[h * I];
    const float *wu = &w.up[h * I];
    for (size_t b = 0; b < x.size(); ++b) {
      const double xh = x[b][h];
      GateUp &rb = r[b];
      for (int64_t j = 0; j < I; ++j) {
        const double tg = xh * wg[j], tu = xh * wu[j];
        rb.g[j] += tg;
        rb.ag[j] += std::fabs(tg);
        rb.u[j] += tu;
        rb.au[j] += std::fabs(tu);
      }
    }
  }
  return r;
}

double sigmoid(double g) { return 1 / (1 + std::exp(-g)); }

/// Rounds one row's values v to the data type and bounds each element's
/// error from its first-order bound dv (see the top of this file).
void finishRow(const std::vector<double> &v, const std::vector<double> &dv,
               moecommDataType_t type, float *out, float *error) {
  const OutputRounding o = outputRounding(type);
  for (size_t k = 0; k < v.size(); ++k) {
    out[k] = roundTo(static_cast<float>(v[k]), type);
    const double e = (1 + o.unit) * dv[k] +
                     (2 * o.unit + 0x1p-23) * std::fabs(v[k]) + 2 * o.eta;
    error[k] = std::nextafter(static_cast<float>(e), HUGE_VALF);
  }
}

/// One block of a rank's received rows, all of one expert: rows
/// [begin, begin + v.size()) of rank `rank`.
struct RowBlock {
  int rank;
  int64_t begin;
  /// Per row: the values [H] and their bounds [H], zero on entry.
  std::vector<std::vector<double>> &v, &dv;
};

/// Runs fn(weights, block) for every block of up to kBlockRows received rows
/// of one expert on every rank (only those from source rank `onlySource` when
/// it is >= 0), with the weights of the rows' global expert (generated once
/// per expert with rows), and collects the rows' values v [H] and bounds dv
/// [H].
template <typename Fn>
ExpertRows mapExpertRows(const Problem &p, const std::vector<RankLayout> &l,
                         uint64_t seed, int64_t intermediate,
                         int64_t onlySource, Fn fn) {
  const int64_t H = p.hidden, L = p.localExperts();
  ExpertRows out;
  out.rows.resize(p.ranks);
  out.error.resize(p.ranks);
  std::vector<std::vector<double>> v, dv;
  for (int d = 0; d < p.ranks; ++d) {
    out.rows[d].assign(l[d].rows.size() * H, 0.0f);
    out.error[d].assign(l[d].rows.size() * H, 0.0f);
    // Expert-major rows: local expert e's real rows start its segment
    // (padding rows stay zero: an FFN of a zero row is zero).
    for (int64_t e = 0; e < L; ++e) {
      int64_t row = l[d].expertOffsets[e];
      int64_t end = row + l[d].tokensPerExpert[e];
      if (onlySource >= 0) {
        // A segment's rows are in source rank order (RankLayout).
        const auto first = l[d].rows.begin();
        const auto from = std::partition_point(
            first + row, first + end,
            [&](const RecvRow &r) { return r.srcRank < onlySource; });
        const auto to =
            std::partition_point(from, first + end, [&](const RecvRow &r) {
              return r.srcRank == onlySource;
            });
        row = from - first;
        end = to - first;
      }
      if (row == end)
        continue;
      const ExpertWeights w = expertWeights(
          seed, weightsExpert(p.slotExperts, d * L + e), H, intermediate);
      for (; row < end; row += kBlockRows) {
        const size_t n = static_cast<size_t>(std::min(kBlockRows, end - row));
        v.assign(n, std::vector<double>(H));
        dv.assign(n, std::vector<double>(H));
        fn(w, RowBlock{d, row, v, dv});
        for (size_t b = 0; b < n; ++b)
          finishRow(v[b], dv[b], p.dataType, &out.rows[d][(row + b) * H],
                    &out.error[d][(row + b) * H]);
      }
    }
  }
  return out;
}

/// Pointers to a block's rows in `rows` [R_r * H].
std::vector<const float *> blockRows(const std::vector<float> &rows,
                                     const RowBlock &blk, int64_t H) {
  std::vector<const float *> x(blk.v.size());
  for (size_t b = 0; b < x.size(); ++b)
    x[b] = &rows[(blk.begin + b) * H];
  return x;
}

} // namespace

ExpertRows swigluForward(const Problem &p, const std::vector<RankLayout> &l,
                         const std::vector<std::vector<float>> &recv,
                         uint64_t seed, int64_t intermediate,
                         int64_t onlySource) {
  const int64_t H = p.hidden, I = intermediate;
  const double gammaH = gamma(H), gammaI = gamma(I);
  std::vector<std::vector<double>> h, dh, ad;
  return mapExpertRows(
      p, l, seed, I, onlySource,
      [&](const ExpertWeights &w, const RowBlock &blk) {
        const size_t n = blk.v.size();
        const std::vector<GateUp> gu =
            gateUp(w, blockRows(recv[blk.rank], blk, H));
        h.assign(n, std::vector<double>(I));
        dh.assign(n, std::vector<double>(I));
        ad.assign(n, std::vector<double>(H));
        for (size_t b = 0; b < n; ++b)
          for (int64_t j = 0; j < I; ++j) {
            const double g = gu[b].g[j], sig = sigmoid(g), s = g * sig;
            const double ds = sig * (1 + g * (1 - sig));
            h[b][j] = s * gu[b].u[j];
            dh[b][j] = std::fabs(gu[b].u[j] * ds) * gammaH * gu[b].ag[j] +
                       std::fabs(s) * gammaH * gu[b].au[j] +
                       8 * kU * std::fabs(h[b][j]);
          }
        // dv collects sum_j dh_j |W_down[j][k]| first, then the f32 product's.
        for (int64_t j = 0; j < I; ++j) {
          const float *wd = &w.down[j * H];
          for (size_t b = 0; b < n; ++b) {
            const double hj = h[b][j], dhj = dh[b][j];
            double *d = blk.v[b].data(), *dd = blk.dv[b].data(),
                   *adb = ad[b].data();
            for (int64_t k = 0; k < H; ++k) {
              const double t = hj * wd[k];
              d[k] += t;
              adb[k] += std::fabs(t);
              dd[k] += dhj * std::fabs(static_cast<double>(wd[k]));
            }
          }
        }
        for (size_t b = 0; b < n; ++b)
          for (int64_t k = 0; k < H; ++k)
            blk.dv[b][k] += gammaI * ad[b][k];
      });
}

ExpertRows swigluInputGrad(const Problem &p, const std::vector<RankLayout> &l,
                           const std::vector<std::vector<float>> &recv,
                           const std::vector<std::vector<float>> &gradRecv,
                           uint64_t seed, int64_t intermediate,
                           int64_t onlySource) {
  const int64_t H = p.hidden, I = intermediate;
  const double gammaH = gamma(H), gamma2I = gamma(2 * I);
  std::vector<std::vector<double>> gy, gg, gu, dgg, dgu;
  return mapExpertRows(
      p, l, seed, I, onlySource,
      [&](const ExpertWeights &w, const RowBlock &blk) {
        const size_t n = blk.v.size();
        // grad_y: the row's routing weight times grad_out, rounded on the
        // expert's rank exactly as the graph does (f32 product, then dtype).
        gy.assign(n, std::vector<double>(H));
        for (size_t b = 0; b < n; ++b) {
          const int64_t row = blk.begin + static_cast<int64_t>(b);
          const float weight = l[blk.rank].rows[row].weight;
          for (int64_t k = 0; k < H; ++k)
            gy[b][k] =
                roundTo(gradRecv[blk.rank][row * H + k] * weight, p.dataType);
        }
        const std::vector<GateUp> fu =
            gateUp(w, blockRows(recv[blk.rank], blk, H));
        for (auto *vec : {&gg, &gu, &dgg, &dgu})
          vec->assign(n, std::vector<double>(I));
        for (int64_t j = 0; j < I; ++j) {
          const float *wd = &w.down[j * H];
          for (size_t b = 0; b < n; ++b) {
            double gh = 0, agh = 0;
            for (int64_t k = 0; k < H; ++k) {
              const double t = gy[b][k] * wd[k];
              gh += t;
              agh += std::fabs(t);
            }
            const double g = fu[b].g[j], u = fu[b].u[j], sig = sigmoid(g),
                         s = g * sig;
            const double ds = sig * (1 + g * (1 - sig));
            const double dds = sig * (1 - sig) * (2 + g * (1 - 2 * sig));
            const double dg = gammaH * fu[b].ag[j], du = gammaH * fu[b].au[j];
            const double dgh = gammaH * agh;
            gg[b][j] = gh * u * ds;
            gu[b][j] = gh * s;
            dgg[b][j] = std::fabs(u * ds) * dgh + std::fabs(gh * ds) * du +
                        std::fabs(gh * u * dds) * dg +
                        16 * kU * std::fabs(gg[b][j]);
            dgu[b][j] = std::fabs(s) * dgh + std::fabs(gh * ds) * dg +
                        16 * kU * std::fabs(gu[b][j]);
          }
        }
        for (int64_t k = 0; k < H; ++k) {
          const float *wg = &w.gate[k * I];
          const float *wu = &w.up[k * I];
          for (size_t b = 0; b < n; ++b) {
            double v = 0, a = 0, prop = 0;
            for (int64_t j = 0; j < I; ++j) {
              const double tg = gg[b][j] * wg[j], tu = gu[b][j] * wu[j];
              v += tg + tu;
              a += std::fabs(tg) + std::fabs(tu);
              prop += dgg[b][j] * std::fabs(static_cast<double>(wg[j])) +
                      dgu[b][j] * std::fabs(static_cast<double>(wu[j]));
            }
            blk.v[b][k] = v;
            blk.dv[b][k] = gamma2I * a + prop;
          }
        }
      });
}

} // namespace ref
} // namespace moecomm
