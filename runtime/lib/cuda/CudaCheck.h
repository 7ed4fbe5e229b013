//===- CudaCheck.h - CUDA / NCCL results as Status, device guard -*- C++
//-*-===//
//
// Host-side helpers of the GPU backend: every CUDA or NCCL failure becomes a
// moecomm Status (SystemError with the library's message), never an abort.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_CUDACHECK_H
#define MOECOMM_LIB_CUDA_CUDACHECK_H

#include "Status.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace moecomm {
namespace cuda {

/// SystemError "`what` failed: <CUDA message>" unless `err` is cudaSuccess.
/// Clears CUDA's last error so that later calls are not blamed for it.
Status cudaStatus(cudaError_t err, const char *what);

/// SystemError "`what` failed: <NCCL message> (<last NCCL error>)".
Status ncclStatus(ncclResult_t res, const char *what, ncclComm_t comm);

/// The launch status of the kernels just enqueued (cudaGetLastError).
Status launchStatus(const char *kernel);

/// Makes `device` current for its lifetime, restoring the previous one.
class DeviceGuard {
public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;
  /// The result of switching (a failure is reported once, here).
  const Status &status() const { return status_; }

private:
  int previous_ = -1;
  bool switched_ = false;
  Status status_;
};

/// InvalidArgument unless `ptr` is device memory of `device` or managed
/// memory; nullptr passes (row counts are checked elsewhere). `what` names
/// the argument ("x", "recv", "topk_idx", ...).
Status checkDevicePointer(const void *ptr, const char *what, int device);

/// True when `ptr` is device or managed memory (false for host memory and
/// for pointers CUDA does not know).
bool isDevicePointer(const void *ptr);

/// Multiprocessors of the current device (cached per device; 1 if unknown).
int multiprocessorCount();

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_CUDACHECK_H
