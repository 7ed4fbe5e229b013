//===- Generators.cpp - seeded routing generators -------------------------===//

#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/ExpertLoad.h"
#include "moecomm/Workload/ModelConfig.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <thread>

using namespace llvm;

namespace moecomm::workload {

namespace {

/// splitmix64: a small, fully specified generator, so a seed gives the same
/// routing with every compiler and standard library.
class Rng {
public:
  Rng(uint64_t seed, uint64_t stream) : state(mix(seed) ^ mix(~stream)) {}
  uint64_t next() {
    state += 0x9E3779B97F4A7C15ull;
    return mix(state);
  }
  /// Uniform in the open interval (0, 1).
  double uniform() {
    return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53;
  }
  /// Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return next() % n; }

private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state;
};

/// Picks the `k` indices with the largest keys (ties: lower index first) into
/// `out`, in descending key order. One pass with a heap of the k best so far
/// (its front is the worst of them): the order is total, so this is exactly
/// the first k of a full sort. Indices arrive in increasing order, so a key
/// equal to the worst kept one never displaces it.
void topKByKey(const std::vector<double> &keys, int k,
               std::vector<int> &scratch, std::vector<int> &out) {
  auto better = [&](int a, int b) {
    return keys[a] > keys[b] || (keys[a] == keys[b] && a < b);
  };
  const int n = static_cast<int>(keys.size());
  const int first = std::min(k, n);
  scratch.resize(first);
  for (int i = 0; i < first; ++i)
    scratch[i] = i;
  std::make_heap(scratch.begin(), scratch.end(), better);
  double worst = first > 0 ? keys[scratch.front()] : 0.0;
  for (int i = first; i < n; ++i) {
    if (keys[i] > worst) {
      std::pop_heap(scratch.begin(), scratch.end(), better);
      scratch.back() = i;
      std::push_heap(scratch.begin(), scratch.end(), better);
      worst = keys[scratch.front()];
    }
  }
  std::sort(scratch.begin(), scratch.end(), better);
  out.assign(scratch.begin(), scratch.end());
}

/// Writes normalized weights (sum 1) for the chosen scores.
void normalizedWeights(const std::vector<double> &scores, float *out, int k) {
  double sum = 0;
  for (int i = 0; i < k; ++i)
    sum += scores[i];
  for (int i = 0; i < k; ++i)
    out[i] = static_cast<float>(scores[i] / sum);
}

Expected<int> parseLayer(StringRef text) {
  text.consume_front("layer");
  int layer;
  if (text.getAsInteger(10, layer) || layer < 0)
    return inputError(formatv("bad trace layer '{0}'", text));
  return layer;
}

/// The seeded permutation of zipf:S: perm[i] is the expert with the i-th
/// largest popularity.
std::vector<int64_t> zipfPermutation(int64_t E, uint64_t seed) {
  std::vector<int64_t> perm(E);
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(seed, 0xFFFF'FFFF'0000'0001ull);
  for (int64_t i = E - 1; i > 0; --i)
    std::swap(perm[i], perm[rng.below(static_cast<uint64_t>(i + 1))]);
  return perm;
}

} // namespace

Expected<RoutingDist> parseRoutingDist(StringRef spec) {
  RoutingDist d;
  d.spec = spec.str();
  auto [kind, rest] = spec.split(':');
  if (kind == "uniform" && !spec.contains(':')) {
    d.kind = RoutingDist::Uniform;
    return d;
  }
  if (kind == "zipf") {
    d.kind = RoutingDist::Zipf;
    if (rest.empty() || rest.getAsDouble(d.zipfExponent) ||
        !std::isfinite(d.zipfExponent) || d.zipfExponent < 0)
      return inputError(formatv("bad --routing-dist '{0}': zipf:S needs an "
                                "exponent S >= 0 (e.g. zipf:1.2)",
                                spec));
    return d;
  }
  if (kind == "node-limited") {
    d.kind = RoutingDist::NodeLimited;
    if (!rest.empty() &&
        rest.find_first_not_of("0123456789") == StringRef::npos &&
        rest.getAsInteger(10, d.groupLimit))
      return inputError(formatv("bad --routing-dist '{0}': group count {1} is "
                                "too large",
                                spec, rest));
    if (rest.empty() || rest.getAsInteger(10, d.groupLimit) || d.groupLimit < 1)
      return inputError(
          formatv("bad --routing-dist '{0}': node-limited:M needs "
                  "a group count M >= 1 (e.g. node-limited:4)",
                  spec));
    return d;
  }
  if (kind == "trace") {
    d.kind = RoutingDist::Trace;
    SmallVector<StringRef, 3> parts;
    rest.split(parts, ':');
    if (parts.size() != 3 || parts[0].empty() || parts[1].empty())
      return inputError(formatv("bad --routing-dist '{0}': expected "
                                "trace:MODEL:DOMAIN:LAYER (e.g. "
                                "trace:mixtral-8x7b:github:15)",
                                spec));
    d.traceModel = parts[0].str();
    d.traceDomain = parts[1].str();
    Expected<int> layer = parseLayer(parts[2]);
    if (!layer)
      return inputError(formatv("bad --routing-dist '{0}': {1}", spec,
                                toString(layer.takeError())));
    d.traceLayer = *layer;
    return d;
  }
  return inputError(
      formatv("unknown --routing-dist '{0}' (expected uniform, "
              "zipf:S, node-limited:M or trace:MODEL:DOMAIN:LAYER)",
              spec));
}

Expected<RoutingProblem> generateRouting(const GenerateOptions &o) {
  if (o.ranks < 1 || o.ranksPerNode < 1)
    return inputError(formatv("--ranks ({0}) and --ranks-per-node ({1}) must "
                              "be >= 1",
                              o.ranks, o.ranksPerNode));
  if (o.ranks % o.ranksPerNode != 0)
    return inputError(formatv("--ranks ({0}) must be a multiple of "
                              "--ranks-per-node ({1}): W % G = {2}",
                              o.ranks, o.ranksPerNode,
                              o.ranks % o.ranksPerNode));
  if (o.numExperts < 1 || (!o.placed && o.numExperts % o.ranks != 0))
    return inputError(formatv("--experts ({0}) must be a positive multiple of "
                              "--ranks ({1}): E % W = {2}",
                              o.numExperts, o.ranks,
                              o.numExperts % std::max(o.ranks, 1)));
  if (o.topk < 1 || o.topk > o.numExperts)
    return inputError(formatv("--topk ({0}) must be in [1, experts = {1}]",
                              o.topk, o.numExperts));
  if (o.hidden < 1 || o.hidden > workload::kMaxHidden)
    return inputError(formatv("--hidden ({0}) must be in [1, {1}]", o.hidden,
                              workload::kMaxHidden));
  if (o.tokens.size() != 1 && o.tokens.size() != static_cast<size_t>(o.ranks))
    return inputError(formatv("--tokens has {0} values; give one, or one per "
                              "rank ({1})",
                              o.tokens.size(), o.ranks));
  for (int64_t t : o.tokens)
    if (t < 0 || t > kMaxTokensPerRank)
      return inputError(formatv("--tokens value {0} must be in [0, {1}]", t,
                                kMaxTokensPerRank));

  RoutingProblem p;
  p.ranks = o.ranks;
  p.ranksPerNode = o.ranksPerNode;
  p.numExperts = o.numExperts;
  p.topk = o.topk;
  p.hidden = o.hidden;
  p.dtype = o.dtype;
  p.capacity = o.capacity;
  p.explicitWeights = true;
  const int64_t E = o.numExperts;
  const int K = o.topk;

  // Per-expert sampling weights (uniform, zipf, trace), also as logarithms
  // (-inf: weight 0) for weights too small to divide by (see below); or
  // group setup.
  std::vector<double> weight(E, 1.0), logWeight(E, 0.0);
  int groups = 0;
  int64_t groupSize = 0;
  switch (o.dist.kind) {
  case RoutingDist::Uniform:
    p.origin = formatv("generated uniform, seed {0}", o.seed).str();
    break;
  case RoutingDist::Zipf: {
    const std::vector<int64_t> perm = zipfPermutation(E, o.seed);
    for (int64_t e = 0; e < E; ++e) {
      const double place = static_cast<double>(e + 1);
      weight[perm[e]] = 1.0 / std::pow(place, o.dist.zipfExponent);
      logWeight[perm[e]] = -o.dist.zipfExponent * std::log(place);
    }
    p.origin =
        formatv("generated zipf:{0}, seed {1}", o.dist.zipfExponent, o.seed)
            .str();
    break;
  }
  case RoutingDist::NodeLimited: {
    groups = o.groups > 0 ? o.groups : p.numNodes();
    if (E % groups != 0)
      return inputError(formatv("node-limited routing: {0} groups must divide "
                                "the {1} experts",
                                groups, E));
    groupSize = E / groups;
    if (o.dist.groupLimit > groups)
      return inputError(formatv("node-limited:{0} needs M <= groups ({1})",
                                o.dist.groupLimit, groups));
    if (o.dist.groupLimit * groupSize < K)
      return inputError(formatv("node-limited:{0}: {0} groups of {1} experts "
                                "cannot hold topk = {2}",
                                o.dist.groupLimit, groupSize, K));
    p.origin = formatv("generated node-limited:{0} over {1} groups of {2} "
                       "experts, seed {3}",
                       o.dist.groupLimit, groups, groupSize, o.seed)
                   .str();
    break;
  }
  case RoutingDist::Trace: {
    int64_t traceExperts = 0;
    Expected<std::vector<double>> loads =
        loadTraceLoads(o.traceFile, o.dist.traceModel, o.dist.traceDomain,
                       o.dist.traceLayer, E, &traceExperts);
    if (!loads)
      return loads.takeError();
    int64_t positive = 0;
    for (int64_t e = 0; e < E; ++e) {
      const double v = (*loads)[e];
      weight[e] = v;
      logWeight[e] = v > 0 ? std::log(v) : -HUGE_VAL;
      positive += v > 0;
    }
    if (positive < K)
      return inputError(formatv("trace {0}: only {1} experts have a non-zero "
                                "load, fewer than topk = {2}",
                                o.dist.spec, positive, K));
    std::string loadsNote =
        traceExperts == E ? formatv("its loads of {0} experts", E).str()
                          : formatv("its loads of {0} experts re-binned to {1}",
                                    traceExperts, E)
                                .str();
    p.origin =
        formatv("generated {0} ({1}), seed {2}", o.dist.spec, loadsNote, o.seed)
            .str();
    break;
  }
  }

  p.numTokens.resize(p.ranks);
  p.topkIdx.resize(p.ranks);
  p.topkWeights.resize(p.ranks);
  for (int r = 0; r < p.ranks; ++r) {
    const int64_t T = o.tokens.size() == 1 ? o.tokens[0] : o.tokens[r];
    p.numTokens[r] = T;
    p.topkIdx[r].resize(static_cast<size_t>(T * K));
    p.topkWeights[r].resize(static_cast<size_t>(T * K));
  }

  // Efraimidis-Spirakis keys log(u)/w (|log(u)| < 38) are finite for
  // w >= 1e-300. A smaller positive weight (a trace load 1e-320 of the
  // largest, zipf:1000) would overflow to the -inf of weight 0, so then the
  // keys are log(w) - log(-log(u)): the same order, finite, one log more.
  const bool logKeys =
      std::any_of(logWeight.begin(), logWeight.end(), [](double lw) {
        return lw > -HUGE_VAL && lw < std::log(1e-300);
      });

  // Every rank draws from its own stream (Rng(seed, rank)), so ranks can be
  // generated in any order, on any number of threads, with the same result.
  auto generateRank = [&](int r) {
    std::vector<double> keys(E), chosenScores(K), groupScore;
    std::vector<int> scratch, chosen, groupOrder, groupChosen, candidates;
    std::vector<double> candidateKeys;
    const int64_t T = p.numTokens[r];
    Rng rng(o.seed, static_cast<uint64_t>(r));
    for (int64_t t = 0; t < T; ++t) {
      if (o.dist.kind == RoutingDist::NodeLimited) {
        for (int64_t e = 0; e < E; ++e)
          keys[e] = rng.uniform();
        groupScore.assign(groups, 0.0);
        for (int g = 0; g < groups; ++g) {
          // Sum of the group's top-2 scores (DeepSeek-V3's group score).
          double best = 0, second = 0;
          for (int64_t e = g * groupSize; e < (g + 1) * groupSize; ++e) {
            if (keys[e] > best) {
              second = best;
              best = keys[e];
            } else if (keys[e] > second) {
              second = keys[e];
            }
          }
          groupScore[g] = best + (groupSize > 1 ? second : 0.0);
        }
        topKByKey(groupScore, o.dist.groupLimit, groupOrder, groupChosen);
        // The top-K experts of the allowed groups (keys in (0, 1); the
        // allowed groups hold >= K experts), ties to the lower expert id.
        std::sort(groupChosen.begin(), groupChosen.end());
        candidateKeys.clear();
        for (int g : groupChosen)
          for (int64_t e = g * groupSize; e < (g + 1) * groupSize; ++e)
            candidateKeys.push_back(keys[e]);
        topKByKey(candidateKeys, K, scratch, candidates);
        chosen.resize(K);
        for (int k = 0; k < K; ++k) {
          const int64_t i = candidates[k];
          chosen[k] = static_cast<int>(groupChosen[i / groupSize] * groupSize +
                                       i % groupSize);
          chosenScores[k] = keys[chosen[k]];
        }
      } else {
        // Efraimidis-Spirakis: the K largest log(u)/w are a sample without
        // replacement with probability proportional to w.
        if (!logKeys) {
          for (int64_t e = 0; e < E; ++e)
            keys[e] =
                weight[e] > 0 ? std::log(rng.uniform()) / weight[e] : -HUGE_VAL;
        } else {
          for (int64_t e = 0; e < E; ++e)
            keys[e] = logWeight[e] > -HUGE_VAL
                          ? logWeight[e] - std::log(-std::log(rng.uniform()))
                          : -HUGE_VAL;
        }
        topKByKey(keys, K, scratch, chosen);
        for (int k = 0; k < K; ++k)
          chosenScores[k] = rng.uniform();
      }
      for (int k = 0; k < K; ++k)
        p.topkIdx[r][t * K + k] = chosen[k];
      normalizedWeights(chosenScores, p.topkWeights[r].data() + t * K, K);
    }
  };

  // Large problems (e.g. 1024 ranks for moecomm-bench) use every core.
  double work = 0;
  for (int64_t T : p.numTokens)
    work += static_cast<double>(T) * static_cast<double>(E);
  const unsigned threads =
      work < 4e6 ? 1u
                 : std::min<unsigned>(
                       std::max(1u, std::thread::hardware_concurrency()),
                       static_cast<unsigned>(p.ranks));
  if (threads <= 1) {
    for (int r = 0; r < p.ranks; ++r)
      generateRank(r);
  } else {
    std::atomic<int> next{0};
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < threads; ++i)
      pool.emplace_back([&] {
        for (int r = next++; r < p.ranks; r = next++)
          generateRank(r);
      });
    for (std::thread &th : pool)
      th.join();
  }
  return p;
}

Expected<std::vector<double>> expertWeights(const GenerateOptions &o) {
  const int64_t E = o.numExperts;
  if (E < 1 || E > kMaxExperts)
    return inputError(
        formatv("expert weights: E = {0} is outside [1, {1}]", E, kMaxExperts));
  std::vector<double> weight(E, 1.0);
  switch (o.dist.kind) {
  case RoutingDist::Uniform:
  case RoutingDist::NodeLimited:
    break;
  case RoutingDist::Zipf: {
    const std::vector<int64_t> perm = zipfPermutation(E, o.seed);
    for (int64_t e = 0; e < E; ++e)
      weight[perm[e]] =
          1.0 / std::pow(static_cast<double>(e + 1), o.dist.zipfExponent);
    break;
  }
  case RoutingDist::Trace:
    return loadTraceLoads(o.traceFile, o.dist.traceModel, o.dist.traceDomain,
                          o.dist.traceLayer, E);
  }
  return weight;
}

} // namespace moecomm::workload
