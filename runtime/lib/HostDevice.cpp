//===- HostDevice.cpp - The host device of the compiled ABI ---------------===//
//
// The device of a thread bound with moecommCompiledBindDevice to a threads
// or mpi communicator (CompiledDevice.h): the stream contract of the CUDA
// device executed in order on the calling thread, so that cuda-target
// graphs run -- buffer placement, stream order, start/wait pairing, frees
// after waits -- and verify against the oracle on a CPU. Memory is 256-byte
// aligned like cudaMallocAsync's; the GEMM is moecomm_rt_matmul_f32's host
// path (Matmul.h), FP8 the runtime's host conversion (moecommQuantizeFp8).
//
//===----------------------------------------------------------------------===//

#include "ApiBoundary.h"
#include "CompiledDevice.h"
#include "Matmul.h"
#include "moecomm/Model/WireFormat.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace moecomm {
namespace {

/// cudaMallocAsync's alignment (what moecomm_rt_alloc promises).
constexpr int64_t kAlignment = 256;

class HostDevice final : public CompiledDevice {
public:
  Status allocate(int64_t bytes, void *&ptr) override {
    // aligned_alloc wants a multiple of the alignment.
    ptr = bytes <= INT64_MAX - kAlignment
              ? std::aligned_alloc(kAlignment, size_t((bytes + kAlignment - 1) /
                                                      kAlignment * kAlignment))
              : nullptr;
    if (!ptr)
      return systemError(
          cat("out of memory: ", bytes, " bytes of host device memory"));
    return Status::success();
  }
  Status free(void *ptr) override {
    std::free(ptr);
    return Status::success();
  }
  Status copy2D(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
                int64_t widthBytes, int64_t height) override {
    for (int64_t i = 0; i < height; ++i)
      std::memmove(static_cast<char *>(dst) + i * dstPitch,
                   static_cast<const char *>(src) + i * srcPitch,
                   size_t(widthBytes));
    return Status::success();
  }
  Status zero2D(void *dst, int64_t pitch, int64_t widthBytes,
                int64_t height) override {
    for (int64_t i = 0; i < height; ++i)
      std::memset(static_cast<char *>(dst) + i * pitch, 0, size_t(widthBytes));
    return Status::success();
  }
  Status synchronize() override { return Status::success(); }
  Status gemm(const GemmArgs &args) override {
    blasGemm(args);
    return Status::success();
  }
  Status convertRows(const moecommRows_t &in,
                     const moecommRows_t &out) override {
    moecommRows_t to = out;
    moecommResult_t r = isFp8(out.type) ? moecommQuantizeFp8(&in, &to)
                                        : moecommDequantizeFp8(&in, &to);
    return r == moecommSuccess ? Status::success() : threadLastFailure();
  }
  moecommStream_t stream() const override { return nullptr; }
};

} // namespace

std::shared_ptr<CompiledDevice> hostDevice() {
  static const std::shared_ptr<CompiledDevice> device =
      std::make_shared<HostDevice>();
  return device;
}

} // namespace moecomm
