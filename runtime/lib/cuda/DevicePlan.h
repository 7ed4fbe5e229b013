//===- DevicePlan.h - A layout's row maps in device memory ------*- C++ -*-===//
//
// The exact mode builds a layout's plan on the host (Plan.cpp, as on the CPU
// backends); DevicePlan is that plan's CSR row maps copied to the device
// once, at layout creation, for the kernels of DeviceRows.h to execute:
// every map as CSR (offsets, src, coefs) and, when each row has at most one
// term, also as a gather index (the row's source, -1 for an empty row).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_DEVICEPLAN_H
#define MOECOMM_LIB_CUDA_DEVICEPLAN_H

#include "DeviceBuffer.h"
#include "DeviceEngine.h"
#include "DeviceRows.h"
#include "moecomm/Runtime/Plan.h"

#include <memory>
#include <vector>

namespace moecomm {
namespace cuda {

/// One RowMap on the device.
struct DeviceMap {
  int64_t rows = 0, terms = 0;
  /// [rows] source row per output row (-1: empty), when every row has at
  /// most one term; else nullptr.
  const int64_t *gather = nullptr;
  /// The map as CSR; csr.coefs is nullptr when the map has none.
  DeviceCsr csr;
  /// Every row has exactly one term (isPlainGather's shape condition).
  bool oneTermPerRow = false;
  bool hasCoefs = false;

  /// isPlainGather(map, weighted): one unweighted term per row.
  bool plainGather(bool weighted) const {
    return oneTermPerRow && !(weighted && hasCoefs);
  }
  /// The CSR with coefficients only when `weighted`.
  DeviceCsr reduceMap(bool weighted) const {
    DeviceCsr m = csr;
    if (!weighted)
      m.coefs = nullptr;
    return m;
  }
};

/// The maps of one direction: a pack per stage, then the unpack.
struct DeviceDirection {
  std::vector<DeviceMap> packs;
  DeviceMap unpack;
};

/// A layout's device data (DeviceLayout of the nccl backend).
class DevicePlan final : public DeviceLayout {
public:
  /// Copies every map of `plan` to the current device (one allocation, one
  /// synchronous copy).
  static Status upload(const RankPlan &plan, std::unique_ptr<DevicePlan> &out);

  const DeviceDirection &direction(moecommDirection_t d) const {
    return d == moecommDirectionDispatch ? dispatch_ : combine_;
  }

private:
  DeviceBuffer memory_;
  DeviceDirection dispatch_, combine_;
};

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_DEVICEPLAN_H
