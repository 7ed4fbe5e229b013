//===- HostRows.h - payload rows in the host dtype ---------------*- C++ -*-===//

#ifndef MOECOMM_TOOLS_RUN_HOSTROWS_H
#define MOECOMM_TOOLS_RUN_HOSTROWS_H

#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <vector>

namespace moecomm::run {

/// Rows of the host payload type: f32 values or bf16 bits.
struct HostRows {
  moecommDataType_t type;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;

  HostRows(moecommDataType_t type, int64_t elements) : type(type) {
    if (type == moecommFloat32)
      f32.resize(static_cast<size_t>(elements));
    else
      bf16.resize(static_cast<size_t>(elements));
  }
  void *data() {
    return type == moecommFloat32 ? static_cast<void *>(f32.data())
                                  : static_cast<void *>(bf16.data());
  }
  void assign(const std::vector<float> &values) {
    if (type == moecommFloat32) {
      f32 = values;
      return;
    }
    for (size_t i = 0; i < values.size(); ++i)
      bf16[i] = workload::floatToBf16(values[i]);
  }
  void toFloat(std::vector<float> &out) const {
    if (type == moecommFloat32) {
      out = f32;
      return;
    }
    out.resize(bf16.size());
    for (size_t i = 0; i < bf16.size(); ++i)
      out[i] = workload::bf16ToFloat(bf16[i]);
  }
  moecommRows_t rows(int64_t count, int64_t hidden) {
    return moecommRows_t{data(), nullptr, count, hidden, type};
  }
};

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_HOSTROWS_H
