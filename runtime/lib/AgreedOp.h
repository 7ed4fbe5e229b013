//===- AgreedOp.h - A collective that begins once agreed --------*- C++ -*-===//
//
// Every collective agrees with all ranks before any payload moves
// (docs/runtime.md, "Errors: agreed, never a hang"). Done in the start call,
// that agreement is an all-gather the caller waits for; on a slow
// inter-node link its few bytes queue behind the payload of the collectives
// already in flight, so a compiled graph's start of chunk i + 1 waited for
// chunk i's bytes to drain instead of computing (measured on the emulated
// 25 Mbit/s link: 9.5 s of the chunked identity layer's 12.8 s per
// iteration were spent in start calls). A started collective's operation is
// therefore created with its sequence numbers reserved (HostOperation) and
// wrapped here: the agreement is started (Transport::allGatherStart) and
// decided later, by the progress thread's advance() or by finish(), which
// then begins the operation. A disagreement is reported by the wait, still
// before any payload moved and identically on every rank.
//
// The operation begins as soon as it is agreed, also while earlier
// collectives are in flight: its messages queue behind theirs (Open MPI
// sends a connection's messages in post order), so earlier chunks still
// arrive first, and the link never waits for a rank to see its previous
// exchange complete. Beginning only after every earlier collective had
// completed left each direction idle between exchanges while the ranks
// drifted out of step (2 x 1, 20 Mbit/s, 1024 tokens per rank: the chunked
// identity layer took 1.04-1.05x the unchunked one's time; beginning at
// once, 0.93-0.98x in three runs; docs/BENCHMARKS.md, "Overlap").
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_AGREEDOP_H
#define MOECOMM_LIB_AGREEDOP_H

#include "Comm.h"
#include "Operation.h"

#include <memory>

namespace moecomm {

/// A collective whose agreement on `mine` (fieldNames as for Comm::agree)
/// is in flight; it begins its operation once every rank agreed, and its
/// finish() returns the agreement's error or the operation's result.
class AgreedOp : public Operation {
public:
  /// Starts the agreement. Collective, in call order: the collective's
  /// sequence numbers are reserved now (Comm::startAgreement).
  AgreedOp(Comm &comm, const Signature &mine, const char *const *fieldNames);
  /// The first sequence number the operation may use.
  uint64_t opSeq0() const { return opSeq0_; }
  /// The operation to begin once agreed, made with opSeq0().
  void setOperation(std::unique_ptr<HostOperation> op) { op_ = std::move(op); }

  Advance advance() override;
  Status finish() override;

private:
  /// Decides the completed agreement (err_).
  void decide();
  /// Begins the agreed operation: posts its first messages.
  void begin();

  Comm &comm_;
  Signature mine_;
  std::vector<Signature> all_;
  const char *const *fieldNames_;
  uint64_t opSeq0_ = 0;
  std::unique_ptr<PendingGather> gather_;
  std::unique_ptr<HostOperation> op_;
  bool decided_ = false, begun_ = false;
  Status err_;
};

} // namespace moecomm

#endif // MOECOMM_LIB_AGREEDOP_H
