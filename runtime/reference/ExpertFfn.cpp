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

/// g = x W_gate and u = x W_up with their |term| sums, for one row x [H].
struct GateUp {
  std::vector<double> g, ag, u, au;
};

GateUp gateUp(const ExpertWeights &w, const float *x) {
  const int64_t H = w.hidden, I = w.intermediate;
  GateUp r{std::vector<double>(I), std::vector<double>(I),
           std::vector<double>(I), std::vector<double>(I)};
  for (int64_t h = 0; h < H; ++h) {
    const double xh = x[h];
    const float *wg = &w.gate[h * I];
    const float *wu = &w.up[h * I];
    for (int64_t j = 0; j < I; ++j) {
      const double tg = xh * wg[j], tu = xh * wu[j];
      r.g[j] += tg;
      r.ag[j] += std::fabs(tg);
      r.u[j] += tu;
      r.au[j] += std::fabs(tu);
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

/// Runs fn(weights, rank, row, v, dv) for every received row of every rank,
/// with the weights of the row's global expert (generated once per expert
/// with rows), and collects the rows' values v [H] and bounds dv [H].
template <typename Fn>
ExpertRows mapExpertRows(const Problem &p, const std::vector<RankLayout> &l,
                         uint64_t seed, int64_t intermediate, Fn fn) {
  const int64_t H = p.hidden, L = p.localExperts();
  ExpertRows out;
  out.rows.resize(p.ranks);
  out.error.resize(p.ranks);
  std::vector<double> v(H), dv(H);
  for (int d = 0; d < p.ranks; ++d) {
    out.rows[d].assign(l[d].rows.size() * H, 0.0f);
    out.error[d].assign(l[d].rows.size() * H, 0.0f);
    // Expert-major rows: local expert e's real rows start its segment
    // (padding rows stay zero: an FFN of a zero row is zero).
    for (int64_t e = 0; e < L; ++e) {
      int64_t row = l[d].expertOffsets[e];
      const int64_t end = row + l[d].tokensPerExpert[e];
      if (row == end)
        continue;
      const ExpertWeights w = expertWeights(seed, d * L + e, H, intermediate);
      for (; row < end; ++row) {
        fn(w, d, row, v, dv);
        finishRow(v, dv, p.dataType, &out.rows[d][row * H],
                  &out.error[d][row * H]);
      }
    }
  }
  return out;
}

} // namespace

ExpertRows swigluForward(const Problem &p, const std::vector<RankLayout> &l,
                         const std::vector<std::vector<float>> &recv,
                         uint64_t seed, int64_t intermediate) {
  const int64_t H = p.hidden, I = intermediate;
  std::vector<double> h(I), dh(I), ad(H);
  return mapExpertRows(
      p, l, seed, I,
      [&](const ExpertWeights &w, int rank, int64_t row, std::vector<double> &d,
          std::vector<double> &dd) {
        const GateUp gu = gateUp(w, &recv[rank][row * H]);
        for (int64_t j = 0; j < I; ++j) {
          const double g = gu.g[j], sig = sigmoid(g), s = g * sig;
          const double ds = sig * (1 + g * (1 - sig));
          h[j] = s * gu.u[j];
          dh[j] = std::fabs(gu.u[j] * ds) * gamma(H) * gu.ag[j] +
                  std::fabs(s) * gamma(H) * gu.au[j] + 8 * kU * std::fabs(h[j]);
        }
        // dd collects sum_j dh_j |W_down[j][k]| first, then the f32 product's.
        std::fill(d.begin(), d.end(), 0.0);
        std::fill(dd.begin(), dd.end(), 0.0);
        std::fill(ad.begin(), ad.end(), 0.0);
        for (int64_t j = 0; j < I; ++j) {
          const float *wd = &w.down[j * H];
          for (int64_t k = 0; k < H; ++k) {
            const double t = h[j] * wd[k];
            d[k] += t;
            ad[k] += std::fabs(t);
            dd[k] += dh[j] * std::fabs(static_cast<double>(wd[k]));
          }
        }
        for (int64_t k = 0; k < H; ++k)
          dd[k] += gamma(I) * ad[k];
      });
}

ExpertRows swigluInputGrad(const Problem &p, const std::vector<RankLayout> &l,
                           const std::vector<std::vector<float>> &recv,
                           const std::vector<std::vector<float>> &gradRecv,
                           uint64_t seed, int64_t intermediate) {
  const int64_t H = p.hidden, I = intermediate;
  std::vector<double> gy(H), gg(I), gu(I), dgg(I), dgu(I);
  return mapExpertRows(
      p, l, seed, I,
      [&](const ExpertWeights &w, int rank, int64_t row,
          std::vector<double> &in, std::vector<double> &din) {
        // grad_y: the row's routing weight times grad_out, rounded on the
        // expert's rank exactly as the graph does (f32 product, then dtype).
        const float weight = l[rank].rows[row].weight;
        for (int64_t k = 0; k < H; ++k)
          gy[k] = roundTo(gradRecv[rank][row * H + k] * weight, p.dataType);
        const GateUp fu = gateUp(w, &recv[rank][row * H]);
        for (int64_t j = 0; j < I; ++j) {
          const float *wd = &w.down[j * H];
          double gh = 0, agh = 0;
          for (int64_t k = 0; k < H; ++k) {
            const double t = gy[k] * wd[k];
            gh += t;
            agh += std::fabs(t);
          }
          const double g = fu.g[j], u = fu.u[j], sig = sigmoid(g), s = g * sig;
          const double ds = sig * (1 + g * (1 - sig));
          const double dds = sig * (1 - sig) * (2 + g * (1 - 2 * sig));
          const double dg = gamma(H) * fu.ag[j], du = gamma(H) * fu.au[j];
          const double dgh = gamma(H) * agh;
          gg[j] = gh * u * ds;
          gu[j] = gh * s;
          dgg[j] = std::fabs(u * ds) * dgh + std::fabs(gh * ds) * du +
                   std::fabs(gh * u * dds) * dg + 16 * kU * std::fabs(gg[j]);
          dgu[j] = std::fabs(s) * dgh + std::fabs(gh * ds) * dg +
                   16 * kU * std::fabs(gu[j]);
        }
        for (int64_t k = 0; k < H; ++k) {
          const float *wg = &w.gate[k * I];
          const float *wu = &w.up[k * I];
          double v = 0, a = 0, prop = 0;
          for (int64_t j = 0; j < I; ++j) {
            const double tg = gg[j] * wg[j], tu = gu[j] * wu[j];
            v += tg + tu;
            a += std::fabs(tg) + std::fabs(tu);
            prop += dgg[j] * std::fabs(static_cast<double>(wg[j])) +
                    dgu[j] * std::fabs(static_cast<double>(wu[j]));
          }
          in[k] = v;
          din[k] = gamma(2 * I) * a + prop;
        }
      });
}

} // namespace ref
} // namespace moecomm
