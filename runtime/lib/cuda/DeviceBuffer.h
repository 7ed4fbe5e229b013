//===- DeviceBuffer.h - Owned device memory ---------------------*- C++ -*-===//
//
// DeviceBuffer: cudaMalloc'd memory of one device, freed (with that device
// current) on destruction. Used for what lives as long as a layout or a
// capacity plan. Per-operation scratch uses CUDA's stream-ordered allocator
// instead (StreamBuffer: cudaMallocAsync / cudaFreeAsync on a stream), so
// an operation needs no host synchronization to release it.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_DEVICEBUFFER_H
#define MOECOMM_LIB_CUDA_DEVICEBUFFER_H

#include "CudaCheck.h"

#include <cstdint>
#include <utility>

namespace moecomm {
namespace cuda {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer &&o) noexcept { *this = std::move(o); }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      device_ = o.device_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  /// Allocates `bytes` (>= 0; 0 gives a null buffer) on the current device.
  Status allocate(int64_t bytes, const char *what);
  void reset();

  void *data() const { return ptr_; }
  template <typename T> T *as() const { return static_cast<T *>(ptr_); }
  int64_t bytes() const { return bytes_; }

private:
  void *ptr_ = nullptr;
  int64_t bytes_ = 0;
  int device_ = 0;
};

/// Stream-ordered scratch memory: allocated on `stream` (cudaMallocAsync or
/// cudaMallocFromPoolAsync),
/// usable by work ordered after the allocation on any stream, released on
/// the stream given to release() (or the allocation stream) once all work
/// that uses it is ordered before that point.
class StreamBuffer {
public:
  StreamBuffer() = default;
  ~StreamBuffer() { release(); }
  StreamBuffer(StreamBuffer &&o) noexcept { *this = std::move(o); }
  StreamBuffer &operator=(StreamBuffer &&o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      stream_ = o.stream_;
    }
    return *this;
  }
  StreamBuffer(const StreamBuffer &) = delete;
  StreamBuffer &operator=(const StreamBuffer &) = delete;

  /// From `pool` (nullptr: the device's default pool).
  Status allocate(int64_t bytes, cudaStream_t stream, const char *what,
                  cudaMemPool_t pool = nullptr);
  /// Frees on `stream` (nullptr: the allocation stream).
  void release(cudaStream_t stream = nullptr);

  void *data() const { return ptr_; }
  template <typename T> T *as() const { return static_cast<T *>(ptr_); }
  int64_t bytes() const { return bytes_; }

private:
  void *ptr_ = nullptr;
  int64_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_DEVICEBUFFER_H
