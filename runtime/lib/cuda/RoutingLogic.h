//===- RoutingLogic.h - Per-token / per-slot rules of the device layout ---===//
//
// The decisions the layout and capacity kernels make for one token, one
// pair or one received slot, as plain functions that compile both for the
// device (called by Layout.cu / CapacityKernels.cu) and for the host (so
// that CapacityLogicTest runs the whole capacity algorithm on the CPU,
// multi-rank, against the reference, on a machine without a GPU). No
// CUDA types, no atomics: the kernels do the parallel parts.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_ROUTINGLOGIC_H
#define MOECOMM_LIB_CUDA_ROUTINGLOGIC_H

#include "moecomm/moecomm_nccl.h"

#include <cstdint>

#if defined(__CUDACC__)
#define MOECOMM_HD __host__ __device__ __forceinline__
#else
#define MOECOMM_HD inline
#endif

namespace moecomm {
namespace cuda {

/// What travels with each row in capacity mode: enough for the receiver to
/// place it.
struct CapacityMeta {
  int32_t token;  ///< token index at the source
  int32_t expert; ///< global expert id
  float weight;   ///< routing weight
  int32_t slot;   ///< top-k slot at the source
};
static_assert(sizeof(CapacityMeta) == 16, "CapacityMeta is sent as bytes");

/// Cleans one token's ids row[0..K): an id outside [-1, E) or equal to an
/// earlier slot's id becomes -1. Returns the MOECOMM_CAPACITY_BAD_EXPERT /
/// _DUPLICATE bits it saw.
template <typename IdxT>
MOECOMM_HD int cleanToken(const IdxT *row, int K, int64_t E, int32_t *clean) {
  int bits = 0;
  for (int k = 0; k < K; ++k) {
    const int64_t e = (int64_t)row[k];
    bool valid = e >= 0 && e < E;
    if (e < -1 || e >= E)
      bits |= MOECOMM_CAPACITY_BAD_EXPERT;
    for (int j = 0; valid && j < k; ++j)
      if ((int64_t)row[j] == e) {
        valid = false; // the first slot keeps the id
        bits |= MOECOMM_CAPACITY_DUPLICATE;
      }
    clean[k] = valid ? (int32_t)e : -1;
  }
  return bits;
}

/// True when slot k of a cleaned row is the token's first pair on its
/// destination rank (L experts per rank).
MOECOMM_HD bool firstOnRank(const int32_t *clean, int k, int64_t L) {
  const int64_t d = clean[k] / L;
  for (int j = 0; j < k; ++j)
    if (clean[j] >= 0 && clean[j] / L == d)
      return false;
  return true;
}
MOECOMM_HD bool firstOnNode(const int32_t *clean, int k, int64_t L, int G) {
  const int64_t n = clean[k] / L / G;
  for (int j = 0; j < k; ++j)
    if (clean[j] >= 0 && clean[j] / L / G == n)
      return false;
  return true;
}

/// Position of slot k (kept, clean[k] >= 0) of a cleaned row in (rank,
/// token, expert id) order, given `base`: the pairs before this token on
/// its rank plus those on earlier ranks (the exclusive prefix sum).
MOECOMM_HD int64_t pairPosition(const int32_t *clean, int K, int k, int64_t L,
                                int64_t base) {
  const int32_t e = clean[k];
  const int64_t d = e / L;
  int64_t pos = base;
  for (int j = 0; j < K; ++j)
    if (clean[j] >= 0 && clean[j] / L == d && clean[j] < e)
      ++pos;
  return pos;
}

/// Capacity mode, source side: the send slot d*P + p of a pair at
/// position `pos` for rank d whose pairs start at `rankBase`; -1 when
/// p >= P (dropped at the source).
MOECOMM_HD int64_t sourceSlot(int64_t pos, int64_t d, int64_t rankBase,
                              int64_t P) {
  const int64_t p = pos - rankBase;
  return p < P ? d * P + p : -1;
}

/// Capacity mode, destination side: rows kept from each source s, in rank
/// order, of recvCount[s] pairs of which min(recvCount[s], P) arrived:
/// kept[s] = min(arrived, max(C - rows arrived from ranks < s, 0)).
/// Returns R = sum kept; *dropped = sum recvCount - R.
MOECOMM_HD int64_t keepRows(const int64_t *recvCount, int W, int64_t P,
                            int64_t C, int64_t *kept, int64_t *dropped) {
  int64_t before = 0, total = 0, R = 0;
  for (int s = 0; s < W; ++s) {
    const int64_t c = recvCount[s];
    const int64_t arrived = c < P ? c : P;
    int64_t room = C - before;
    room = room < 0 ? 0 : room;
    const int64_t k = arrived < room ? arrived : room;
    kept[s] = k;
    before += arrived;
    total += c;
    R += k;
  }
  *dropped = total - R;
  return R;
}

/// Sort key of received slot i = s*P + p: its local expert when kept,
/// L (after every expert) otherwise.
MOECOMM_HD uint32_t slotKey(int64_t i, int64_t P, const int64_t *kept,
                            const CapacityMeta *meta, int64_t firstExpert,
                            int64_t L) {
  const int64_t s = i / P, p = i - s * P;
  if (p < kept[s]) {
    const int64_t le = (int64_t)meta[i].expert - firstExpert;
    if (le >= 0 && le < L)
      return (uint32_t)le;
  }
  return (uint32_t)L;
}

/// Combine, source side: the received slot holding the partial row of a
/// pair sent to slot `slot` (-1: masked or dropped), when destination
/// slot / P kept keptBack[slot / P] of this rank's rows.
MOECOMM_HD int64_t combineSource(int64_t slot, int64_t P,
                                 const int64_t *keptBack) {
  return slot >= 0 && slot % P < keptBack[slot / P] ? slot : -1;
}

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_ROUTINGLOGIC_H
