//===- DeviceBuffer.cpp - Owned device memory -----------------------------===//
#include "DeviceBuffer.h"

namespace moecomm {
namespace cuda {

Status DeviceBuffer::allocate(int64_t bytes, const char *what) {
  reset();
  if (bytes < 0)
    return internalError(cat("negative allocation for ", what));
  if (bytes == 0)
    return Status::success();
  if (Status st = cudaStatus(cudaGetDevice(&device_), "cudaGetDevice");
      !st.ok())
    return st;
  void *p = nullptr;
  cudaError_t err = cudaMalloc(&p, (size_t)bytes);
  if (err != cudaSuccess)
    return cudaStatus(
        err, cat("cudaMalloc of ", bytes, " bytes for ", what).c_str());
  ptr_ = p;
  bytes_ = bytes;
  return Status::success();
}

void DeviceBuffer::reset() {
  if (!ptr_)
    return;
  DeviceGuard guard(device_);
  (void)cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Status StreamBuffer::allocate(int64_t bytes, cudaStream_t stream,
                              const char *what, cudaMemPool_t pool) {
  release();
  stream_ = stream;
  if (bytes < 0)
    return internalError(cat("negative allocation for ", what));
  if (bytes == 0)
    return Status::success();
  void *p = nullptr;
  cudaError_t err =
      pool ? cudaMallocFromPoolAsync(&p, (size_t)bytes, pool, stream)
           : cudaMallocAsync(&p, (size_t)bytes, stream);
  if (err != cudaSuccess)
    return cudaStatus(
        err, cat("cudaMallocAsync of ", bytes, " bytes for ", what).c_str());
  ptr_ = p;
  bytes_ = bytes;
  return Status::success();
}

void StreamBuffer::release(cudaStream_t stream) {
  if (!ptr_)
    return;
  (void)cudaFreeAsync(ptr_, stream ? stream : stream_);
  ptr_ = nullptr;
  bytes_ = 0;
}

} // namespace cuda
} // namespace moecomm
