//===- CudaCheck.cpp - CUDA / NCCL results as Status, device guard --------===//
#include "CudaCheck.h"

#include <mutex>
#include <vector>

namespace moecomm {
namespace cuda {

Status cudaStatus(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return Status::success();
  (void)cudaGetLastError(); // clear the (non-sticky) error
  return systemError(cat(what, " failed: ", cudaGetErrorName(err), ": ",
                         cudaGetErrorString(err)));
}

Status ncclStatus(ncclResult_t res, const char *what, ncclComm_t comm) {
  if (res == ncclSuccess)
    return Status::success();
  const char *last = ncclGetLastError(comm);
  return systemError(cat(what, " failed: ", ncclGetErrorString(res),
                         last && *last ? cat(" (", last, ")") : ""));
}

Status launchStatus(const char *kernel) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess)
    return Status::success();
  return systemError(cat("launching ", kernel, " failed: ",
                         cudaGetErrorName(err), ": ", cudaGetErrorString(err)));
}

DeviceGuard::DeviceGuard(int device) {
  status_ = cudaStatus(cudaGetDevice(&previous_), "cudaGetDevice");
  if (status_.ok() && previous_ != device) {
    status_ = cudaStatus(cudaSetDevice(device), "cudaSetDevice");
    switched_ = status_.ok();
  }
}

DeviceGuard::~DeviceGuard() {
  if (switched_)
    (void)cudaSetDevice(previous_);
}

Status checkDevicePointer(const void *ptr, const char *what, int device) {
  if (!ptr)
    return Status::success();
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return invalidArgument(cat(what, " is not memory CUDA knows (",
                               cudaGetErrorString(err),
                               "); the nccl backend needs device pointers"));
  }
  if (attr.type == cudaMemoryTypeManaged)
    return Status::success();
  if (attr.type != cudaMemoryTypeDevice)
    return invalidArgument(cat(what, " is host memory; the nccl backend needs "
                                     "device pointers"));
  if (attr.device != device)
    return invalidArgument(cat(what, " is memory of CUDA device ", attr.device,
                               ", the communicator uses device ", device));
  return Status::success();
}

bool isDevicePointer(const void *ptr) {
  if (!ptr)
    return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice ||
         attr.type == cudaMemoryTypeManaged;
}

int multiprocessorCount() {
  static std::mutex mu;
  static std::vector<int> counts;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  std::lock_guard<std::mutex> lock(mu);
  if ((int)counts.size() <= device)
    counts.resize(device + 1, 0);
  if (counts[device] == 0) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) !=
            cudaSuccess ||
        n < 1) {
      (void)cudaGetLastError();
      n = 1;
    }
    counts[device] = n;
  }
  return counts[device];
}

} // namespace cuda
} // namespace moecomm
