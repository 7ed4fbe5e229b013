//===- AgreedOp.cpp - A started collective that begins once agreed -------===//
#include "AgreedOp.h"

#include "Transport.h"

namespace moecomm {

AgreedOp::AgreedOp(Comm &comm, const Signature &mine,
                   const char *const *fieldNames)
    : comm_(comm), mine_(mine), all_(comm.size(), Signature(OpKind::Barrier)),
      fieldNames_(fieldNames) {
  gather_ = comm.startAgreement(mine_, all_.data(), opSeq0_);
}

void AgreedOp::decide() {
  decided_ = true;
  err_ = comm_.transport().waitGather(*gather_);
  if (err_.ok())
    err_ = decideAgreement(all_, fieldNames_);
}

void AgreedOp::begin() {
  begun_ = true;
  op_->begin();
}

Operation::Advance AgreedOp::advance() {
  Advance decided = Advance::Blocked;
  if (!decided_) {
    if (!comm_.transport().testGather(*gather_))
      return Advance::Blocked;
    decide();
    if (!err_.ok())
      return Advance::Complete;
    decided = Advance::Moved;
  }
  if (!err_.ok())
    return Advance::Complete;
  if (!begun_) {
    begin();
    decided = Advance::Moved;
  }
  const Advance a = op_->advance();
  return a == Advance::Blocked ? decided : a;
}

Status AgreedOp::finish() {
  // Requests finish in start order (Request.h): every earlier one is
  // complete here.
  if (!decided_)
    decide();
  if (!err_.ok())
    return err_;
  if (!begun_)
    begin();
  return op_->finish();
}

} // namespace moecomm
