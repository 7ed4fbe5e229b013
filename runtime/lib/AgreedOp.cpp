//===- AgreedOp.cpp - A started collective that begins once agreed -------===//
#include "AgreedOp.h"

#include "Transport.h"

namespace moecomm {

AgreedOp::AgreedOp(Comm &comm, const Signature &mine,
                   const char *const *fieldNames)
    : comm_(comm), mine_(mine),
      all_(comm.size(), Signature(OpKind::Barrier)), fieldNames_(fieldNames) {
  gather_ = comm.startAgreement(mine_, all_.data(), opSeq0_);
}

void AgreedOp::decide() {
  decided_ = true;
  err_ = comm_.transport().waitGather(*gather_);
  if (err_.ok())
    err_ = decideAgreement(all_, fieldNames_);
  if (err_.ok())
    op_->begin();
}

Operation::Advance AgreedOp::advance() {
  if (!decided_) {
    if (!comm_.transport().testGather(*gather_))
      return Advance::Blocked;
    decide();
    return err_.ok() ? Advance::Moved : Advance::Complete;
  }
  return err_.ok() ? op_->advance() : Advance::Complete;
}

Status AgreedOp::finish() {
  if (!decided_)
    decide();
  return err_.ok() ? op_->finish() : err_;
}

} // namespace moecomm
