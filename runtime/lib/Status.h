//===- Status.h - Result code plus message ---------------------*- C++ -*-===//
#ifndef MOECOMM_LIB_STATUS_H
#define MOECOMM_LIB_STATUS_H

#include "moecomm/moecomm.h"

#include <sstream>
#include <string>
#include <utility>

namespace moecomm {

/// A result code with its human-readable message ("" on success).
struct Status {
  moecommResult_t code = moecommSuccess;
  std::string message;

  bool ok() const { return code == moecommSuccess; }
  static Status success() { return Status(); }
  static Status error(moecommResult_t code, std::string message) {
    Status s;
    s.code = code;
    s.message = std::move(message);
    return s;
  }
};

/// Concatenates the stream representations of `args`.
template <typename... Args> std::string cat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

inline Status invalidArgument(std::string msg) {
  return Status::error(moecommInvalidArgument, std::move(msg));
}
inline Status mismatch(std::string msg) {
  return Status::error(moecommMismatch, std::move(msg));
}
inline Status internalError(std::string msg) {
  return Status::error(moecommInternalError, std::move(msg));
}
inline Status systemError(std::string msg) {
  return Status::error(moecommSystemError, std::move(msg));
}

/// Keeps the first failure: `into` becomes `st` unless it already failed.
inline void mergeStatus(Status &into, const Status &st) {
  if (into.ok() && !st.ok())
    into = st;
}

/// Prefixes a failure's message with the rank it happened on, so an error
/// agreed across ranks still says where it started; success passes through.
inline Status onRank(int rank, Status st) {
  if (!st.ok())
    st.message = cat("rank ", rank, ": ", st.message);
  return st;
}

} // namespace moecomm

#endif // MOECOMM_LIB_STATUS_H
