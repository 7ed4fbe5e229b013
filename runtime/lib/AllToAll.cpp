//===- AllToAll.cpp - The counts of the ragged all_to_all -----------------===//
#include "AllToAll.h"

#include "Comm.h"
#include "moecomm/Model/Sizes.h"

#include <algorithm>
#include <vector>

namespace moecomm {

Status checkCounts(const Comm &comm, const int64_t *counts, const char *what) {
  if (!counts)
    return invalidArgument(cat(what, " is NULL"));
  int64_t total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (counts[r] < 0)
      return invalidArgument(
          cat(what, "[", r, "] is negative (", counts[r], ")"));
    // A wrapped sum could match the buffer's row count.
    if (!checkedAdd(total, counts[r], total))
      return invalidArgument(cat("the sum of ", what, " overflows int64"));
  }
  return Status::success();
}

Status checkCountsTranspose(Comm &comm, const int64_t *sendCounts,
                            const int64_t *recvCounts) {
  const int W = comm.size();
  std::vector<int64_t> mine(2 * W), all((size_t)2 * W * W);
  std::copy(sendCounts, sendCounts + W, mine.begin());
  std::copy(recvCounts, recvCounts + W, mine.begin() + W);
  if (Status st = comm.allGather(mine.data(), 2 * W * 8, all.data()); !st.ok())
    return st;
  for (int r = 0; r < W; ++r)
    for (int s = 0; s < W; ++s) {
      int64_t expects = all[(size_t)r * 2 * W + W + s];
      int64_t sends = all[(size_t)s * 2 * W + r];
      if (expects != sends)
        return mismatch(cat("rank ", r, " expects ", expects,
                            " rows from rank ", s, " but rank ", s, " sends ",
                            sends));
    }
  return Status::success();
}

Status allToAllCounts(Comm &comm, const int64_t *sendCounts,
                      int64_t *recvCounts) {
  const int W = comm.size(), me = comm.rank();
  Status local = checkCounts(comm, sendCounts, "send_counts");
  if (local.ok() && !recvCounts)
    local = invalidArgument("recv_counts is NULL");
  Signature sig(OpKind::AllToAllCounts);
  sig.setError(onRank(me, local));
  if (Status st = comm.agree(sig, nullptr); !st.ok())
    return st;
  std::vector<int64_t> all((size_t)W * W);
  if (Status st = comm.allGather(sendCounts, W * 8, all.data()); !st.ok())
    return st;
  for (int s = 0; s < W; ++s)
    recvCounts[s] = all[(size_t)s * W + me];
  return Status::success();
}

} // namespace moecomm
