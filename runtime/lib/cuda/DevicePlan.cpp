//===- DevicePlan.cpp - A layout's row maps in device memory --------------===//
#include "DevicePlan.h"

#include <cstring>

namespace moecomm {
namespace cuda {

namespace {

constexpr int64_t kAlign = 256;

int64_t alignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

/// Where each array of one map lives in the staging buffer (-1: absent).
struct MapLayout {
  int64_t gather = -1, offsets = -1, src = -1, coefs = -1;
};

bool atMostOneTerm(const RowMap &m) {
  for (int64_t i = 0; i < m.rows(); ++i)
    if (m.offsets[i + 1] - m.offsets[i] > 1)
      return false;
  return true;
}

bool exactlyOneTerm(const RowMap &m) {
  for (int64_t i = 0; i < m.rows(); ++i)
    if (m.offsets[i + 1] - m.offsets[i] != 1)
      return false;
  return true;
}

/// Reserves the arrays of `m` at the end of a buffer of `size` bytes.
MapLayout reserve(const RowMap &m, int64_t &size) {
  MapLayout l;
  auto take = [&](int64_t bytes) {
    int64_t at = size;
    size = alignUp(size + bytes);
    return at;
  };
  if (atMostOneTerm(m))
    l.gather = take(m.rows() * 8);
  l.offsets = take((m.rows() + 1) * 8);
  l.src = take(m.terms() * 8);
  if (!m.coefs.empty())
    l.coefs = take(m.terms() * 4);
  return l;
}

/// Writes the arrays of `m` into the staging buffer.
void stage(const RowMap &m, const MapLayout &l, std::vector<uint8_t> &host) {
  if (l.gather >= 0) {
    int64_t *g = reinterpret_cast<int64_t *>(host.data() + l.gather);
    for (int64_t i = 0; i < m.rows(); ++i)
      g[i] = m.offsets[i + 1] > m.offsets[i] ? m.src[m.offsets[i]] : -1;
  }
  std::memcpy(host.data() + l.offsets, m.offsets.data(), m.offsets.size() * 8);
  if (m.terms() > 0)
    std::memcpy(host.data() + l.src, m.src.data(), m.src.size() * 8);
  if (l.coefs >= 0 && m.terms() > 0)
    std::memcpy(host.data() + l.coefs, m.coefs.data(), m.coefs.size() * 4);
}

/// The device view of `m` whose arrays start at `base`.
DeviceMap view(const RowMap &m, const MapLayout &l, const uint8_t *base) {
  DeviceMap d;
  d.rows = m.rows();
  d.terms = m.terms();
  d.oneTermPerRow = exactlyOneTerm(m);
  d.hasCoefs = !m.coefs.empty();
  if (l.gather >= 0)
    d.gather = reinterpret_cast<const int64_t *>(base + l.gather);
  d.csr.offsets = reinterpret_cast<const int64_t *>(base + l.offsets);
  d.csr.src =
      m.terms() > 0 ? reinterpret_cast<const int64_t *>(base + l.src) : nullptr;
  d.csr.coefs =
      l.coefs >= 0 ? reinterpret_cast<const float *>(base + l.coefs) : nullptr;
  return d;
}

} // namespace

Status DevicePlan::upload(const RankPlan &plan,
                          std::unique_ptr<DevicePlan> &out) {
  auto dp = std::make_unique<DevicePlan>();
  const DirectionPlan *dirs[2] = {&plan.dispatch, &plan.combine};
  std::vector<std::vector<MapLayout>> layouts(2);
  int64_t size = 0;
  for (int d = 0; d < 2; ++d) {
    for (const StagePlan &s : dirs[d]->stages)
      layouts[d].push_back(reserve(s.pack, size));
    layouts[d].push_back(reserve(dirs[d]->unpack, size));
  }
  std::vector<uint8_t> host((size_t)size, 0);
  for (int d = 0; d < 2; ++d) {
    size_t i = 0;
    for (const StagePlan &s : dirs[d]->stages)
      stage(s.pack, layouts[d][i++], host);
    stage(dirs[d]->unpack, layouts[d][i], host);
  }
  if (Status st = dp->memory_.allocate(size, "a layout's row maps"); !st.ok())
    return st;
  if (size > 0)
    if (Status st = cudaStatus(cudaMemcpy(dp->memory_.data(), host.data(),
                                          (size_t)size, cudaMemcpyHostToDevice),
                               "cudaMemcpy of a layout's row maps");
        !st.ok())
      return st;
  const uint8_t *base = dp->memory_.as<const uint8_t>();
  DeviceDirection *views[2] = {&dp->dispatch_, &dp->combine_};
  for (int d = 0; d < 2; ++d) {
    size_t i = 0;
    for (const StagePlan &s : dirs[d]->stages)
      views[d]->packs.push_back(view(s.pack, layouts[d][i++], base));
    views[d]->unpack = view(dirs[d]->unpack, layouts[d][i], base);
  }
  out = std::move(dp);
  return Status::success();
}

} // namespace cuda
} // namespace moecomm
