//===- ExpertFfnTest.cpp - the reference SwiGLU experts and their weights -===//
//
// The weight generator against values recomputed from its documented formula
// (docs/moecomm-run.md, "Expert FFNs": SplitMix64 chain in Python, f32
// arithmetic in NumPy), the forward against the FFN written out by hand, the
// input gradient against central differences of the forward, and the error
// bounds against an f32 evaluation in another order.
//
//===----------------------------------------------------------------------===//

#include "moecomm/Reference/ExpertFfn.h"
#include "moecomm/Reference/ExpertWeights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

using namespace moecomm::ref;

namespace {

TEST(ExpertWeightsTest, MatchesTheDocumentedFormula) {
  // /usr/bin/python3 with numpy, the formula of docs/moecomm-run.md.
  EXPECT_EQ(expertWeight(1, 0, ExpertMatrix::Gate, 0, 0, 7168),
            -0x1.c84abep-8f);
  EXPECT_EQ(expertWeight(1, 3, ExpertMatrix::Down, 5, 7, 768), 0x1.41f968p-8f);
  EXPECT_EQ(expertWeight(42, 255, ExpertMatrix::Up, 7167, 2047, 7168),
            0x1.932dd4p-8f);
}

TEST(ExpertWeightsTest, FilledMatricesAreTheElementsInRange) {
  const int64_t H = 12, I = 5;
  const ExpertWeights w = expertWeights(9, 4, H, I);
  const float bound = 1.0f / std::sqrt(12.0f);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < I; ++i) {
      EXPECT_EQ(w.gate[h * I + i],
                expertWeight(9, 4, ExpertMatrix::Gate, h, i, H));
      EXPECT_EQ(w.up[h * I + i], expertWeight(9, 4, ExpertMatrix::Up, h, i, H));
      EXPECT_EQ(w.down[i * H + h],
                expertWeight(9, 4, ExpertMatrix::Down, i, h, I));
      EXPECT_LE(std::fabs(w.gate[h * I + i]), bound);
    }
  EXPECT_NE(w.gate, w.up); // the matrix is part of the counter
  EXPECT_NE(expertWeights(9, 5, H, I).gate, w.gate);
}

TEST(ExpertWeightsTest, TransposedFillIsTheTranspose) {
  const int64_t H = 12, I = 5;
  const ExpertWeights w = expertWeights(9, 4, H, I);
  std::vector<float> gateT(H * I), downT(H * I);
  fillExpertMatrixTransposed(9, 4, ExpertMatrix::Gate, H, I, H, gateT.data());
  fillExpertMatrixTransposed(9, 4, ExpertMatrix::Down, I, H, I, downT.data());
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < I; ++i) {
      EXPECT_EQ(gateT[i * H + h], w.gate[h * I + i]); // [I][H]
      EXPECT_EQ(downT[h * I + i], w.down[i * H + h]); // [H][I]
    }
}

/// One rank, one expert per rank, K = 1 with weight `weight`: every token's
/// row goes through expert 0 unchanged by the dispatch.
struct OneExpert {
  Problem p;
  std::vector<RankLayout> l;
  std::vector<std::vector<float>> x;
  OneExpert(int64_t H, int64_t tokens, float weight)
      : p{/*ranks=*/1,
          /*ranksPerNode=*/1,
          /*numExperts=*/1,
          /*topk=*/1,
          H,
          moecommFloat32,
          moecommFloat32,
          /*capacity=*/0,
          {RankRouting{tokens, std::vector<int64_t>(tokens, 0),
                       std::vector<float>(tokens, weight)}}},
        l(layout(p)), x{standardX(0, tokens, H)} {}
};

double silu(double g) { return g / (1 + std::exp(-g)); }

TEST(ExpertFfnTest, ForwardIsTheSwiGluFfn) {
  const int64_t H = 6, I = 4;
  OneExpert c(H, 3, 1.0f);
  const ExpertRows y = swigluForward(c.p, c.l, c.x, 5, I);
  const ExpertWeights w = expertWeights(5, 0, H, I);
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t k = 0; k < H; ++k) {
      double d = 0;
      for (int64_t j = 0; j < I; ++j) {
        double g = 0, u = 0;
        for (int64_t h = 0; h < H; ++h) {
          g += double(c.x[0][t * H + h]) * w.gate[h * I + j];
          u += double(c.x[0][t * H + h]) * w.up[h * I + j];
        }
        d += silu(g) * u * w.down[j * H + k];
      }
      EXPECT_NEAR(y.rows[0][t * H + k], d, 1e-6 * std::fabs(d) + 1e-12);
      EXPECT_GT(y.error[0][t * H + k], 0.0f);
    }
}

TEST(ExpertFfnTest, InputGradIsTheForwardsDerivative) {
  // grad_in_h = d/dx_h sum_k grad_y_k y_k(x), grad_y = w * grad_out with
  // grad_out = x (as moecomm-run feeds it), by central differences.
  const int64_t H = 6, I = 4;
  const float weight = 0.5f;
  OneExpert c(H, 2, weight);
  const ExpertRows gin = swigluInputGrad(c.p, c.l, c.x, c.x, 3, I);
  const double step = 1.0 / 1024;
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t h = 0; h < H; ++h) {
      auto loss = [&](double delta) {
        std::vector<std::vector<float>> x = c.x;
        x[0][t * H + h] += static_cast<float>(delta);
        const ExpertRows y = swigluForward(c.p, c.l, x, 3, I);
        double s = 0;
        for (int64_t k = 0; k < H; ++k)
          s += double(weight * c.x[0][t * H + k]) * y.rows[0][t * H + k];
        return s;
      };
      const double fd = (loss(step) - loss(-step)) / (2 * step);
      EXPECT_NEAR(gin.rows[0][t * H + h], fd, 1e-4) << "t " << t << " h " << h;
    }
}

TEST(ExpertFfnTest, BoundsCoverAnF32EvaluationInAnotherOrder) {
  // The graph's side: f32 dot products summed backwards, f32 silu, the
  // output rounded to bf16; it must lie within the bound of the reference.
  const int64_t H = 64, I = 16;
  OneExpert c(H, 4, 1.0f);
  c.p.dataType = c.p.wireType = moecommBfloat16;
  const ExpertRows y = swigluForward(c.p, c.l, c.x, 11, I);
  const ExpertWeights w = expertWeights(11, 0, H, I);
  for (int64_t t = 0; t < 4; ++t) {
    std::vector<float> hv(I);
    for (int64_t j = 0; j < I; ++j) {
      float g = 0, u = 0;
      for (int64_t h = H - 1; h >= 0; --h) {
        g += c.x[0][t * H + h] * w.gate[h * I + j];
        u += c.x[0][t * H + h] * w.up[h * I + j];
      }
      hv[j] = g / (1.0f + std::exp(-g)) * u;
    }
    for (int64_t k = 0; k < H; ++k) {
      float d = 0;
      for (int64_t j = I - 1; j >= 0; --j)
        d += hv[j] * w.down[j * H + k];
      const float graph = roundTo(d, moecommBfloat16);
      EXPECT_LE(std::fabs(graph - y.rows[0][t * H + k]), y.error[0][t * H + k]);
    }
  }
}

TEST(ExpertFfnTest, OnlySourceComputesThatRanksRowsAlone) {
  // Two ranks, two experts, K = 2: each expert's segment holds rows from
  // both ranks. onlySource = 1 must give rank 1's rows exactly as the full
  // computation does and leave rank 0's zero with bound 0.
  const int64_t H = 5, I = 3;
  Problem p{/*ranks=*/2,
            /*ranksPerNode=*/1,
            /*numExperts=*/2,
            /*topk=*/2,
            H,
            moecommFloat32,
            moecommFloat32,
            /*capacity=*/0,
            {RankRouting{2, {0, 1, 1, 0}, {0.5f, 0.25f, 1.0f, 0.75f}},
             RankRouting{3, {1, 0, 0, 1, 1, -1}, {}}}};
  const std::vector<RankLayout> l = layout(p);
  const std::vector<std::vector<float>> x = {standardX(0, 2, H),
                                             standardX(1, 3, H)};
  const std::vector<std::vector<float>> recv = dispatch(p, l, x);
  const ExpertRows all[] = {swigluForward(p, l, recv, 7, I),
                            swigluInputGrad(p, l, recv, recv, 7, I)};
  const ExpertRows mine[] = {swigluForward(p, l, recv, 7, I, 1),
                             swigluInputGrad(p, l, recv, recv, 7, I, 1)};
  for (int f = 0; f < 2; ++f)
    for (int d = 0; d < 2; ++d)
      for (size_t i = 0; i < l[d].rows.size(); ++i) {
        const bool fromOne = l[d].rows[i].srcRank == 1;
        for (int64_t k = 0; k < H; ++k) {
          const size_t e = i * H + k;
          EXPECT_EQ(mine[f].rows[d][e], fromOne ? all[f].rows[d][e] : 0.0f);
          EXPECT_EQ(mine[f].error[d][e], fromOne ? all[f].error[d][e] : 0.0f);
        }
        if (fromOne)
          EXPECT_NE(all[f].rows[d][i * H], 0.0f);
      }
}

TEST(ExpertFfnTest, ReplicasApplyTheirLogicalExpertsWeights) {
  // Two ranks holding a replica of both logical experts each (slots 0, 1 on
  // rank 0 hold experts 0, 1; slots 2, 3 on rank 1 hold 1, 0) and the same
  // token rows: the locality choice keeps every row on its own rank, and a
  // row's output is its logical expert's FFN on either replica.
  const int64_t H = 5, I = 3;
  Problem p{/*ranks=*/2,
            /*ranksPerNode=*/1,
            /*numExperts=*/2,
            /*topk=*/1,
            H,
            moecommFloat32,
            moecommFloat32,
            /*capacity=*/0,
            {RankRouting{2, {0, 1}, {}}, RankRouting{2, {0, 1}, {}}}};
  p.slotExperts = {0, 1, 1, 0};
  const std::vector<RankLayout> l = layout(p);
  const std::vector<std::vector<float>> x = {standardX(0, 2, H),
                                             standardX(0, 2, H)};
  const ExpertRows y = swigluForward(p, l, dispatch(p, l, x), 7, I);
  // (token, logical expert) -> the row's output on rank 0.
  std::map<std::pair<int64_t, int64_t>, std::vector<float>> onRankZero;
  for (int d = 0; d < 2; ++d)
    for (size_t i = 0; i < l[d].rows.size(); ++i) {
      const RecvRow &row = l[d].rows[i];
      ASSERT_EQ(row.srcRank, d);
      const auto key = std::make_pair(
          row.srcToken, p.slotExperts[d * p.localExperts() + row.localExpert]);
      const std::vector<float> out(y.rows[d].begin() + i * H,
                                   y.rows[d].begin() + (i + 1) * H);
      if (d == 0)
        onRankZero[key] = out;
      else
        EXPECT_EQ(out, onRankZero.at(key))
            << "token " << key.first << " expert " << key.second;
    }
  EXPECT_EQ(onRankZero.size(), 2u);
}

} // namespace
