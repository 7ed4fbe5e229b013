//===- CompiledDevice.h - Primitives of the device form ---------*- C++ -*-===//
//
// The device form of the compiled ABI (moecomm_compiled.h, "The device
// form") runs on a thread's *device*: the nccl communicator's CUDA device
// (cuda/CudaCompiledDevice.cpp) or, on the CPU backends, the host device
// (HostDevice.cpp), which executes the same stream contract in order on the
// calling thread so the cuda-target lowering runs and verifies on a CPU.
// Everything else -- the buffer registry, the checks, the entry points
// (CompiledBuffers.cpp, CompiledAbi.cpp, Matmul.cpp) -- is shared, so the two
// implementations differ only in these primitives. Work is stream-ordered:
// each call enqueues on the bound stream (the host device runs it at once)
// and returns; synchronize() waits for all of it.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_COMPILEDDEVICE_H
#define MOECOMM_LIB_COMPILEDDEVICE_H

#include "Status.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <memory>

namespace moecomm {

class Comm;

/// C [m][n] += A [m][k] x B (B [k][n], or [n][k] when transposeB), f32,
/// row-major, row i of X at x + i * ldx (ldx >= the row length; checked by
/// the caller, Matmul.cpp). m, n, k, ld* <= 2^31 - 1 and m, n, k > 0.
struct GemmArgs {
  bool transposeB = false;
  int64_t m = 0, n = 0, k = 0;
  const float *a = nullptr;
  int64_t lda = 1;
  const float *b = nullptr;
  int64_t ldb = 1;
  float *c = nullptr;
  int64_t ldc = 1;
};

class CompiledDevice {
public:
  virtual ~CompiledDevice() = default;
  /// `bytes` (> 0) of this device's memory, 256-byte aligned, usable by work
  /// ordered after the call. SystemError when out of memory.
  virtual Status allocate(int64_t bytes, void *&ptr) = 0;
  /// Frees memory of allocate() once the work enqueued before is done.
  virtual Status free(void *ptr) = 0;
  /// `height` rows of `widthBytes` from src (row i at src + i * srcPitch) to
  /// dst (row i at dst + i * dstPitch), host or this device's memory on
  /// either side (pitches >= widthBytes when height > 1). Host source memory
  /// may be reused as soon as the call returns (CUDA stages pageable
  /// memory before returning).
  virtual Status copy2D(void *dst, int64_t dstPitch, const void *src,
                        int64_t srcPitch, int64_t widthBytes,
                        int64_t height) = 0;
  /// Zero bytes in the same shape as copy2D's destination.
  virtual Status zero2D(void *dst, int64_t pitch, int64_t widthBytes,
                        int64_t height) = 0;
  /// Waits for everything enqueued so far.
  virtual Status synchronize() = 0;
  /// The expert GEMM (C = A op(B) + C, FP32 math).
  virtual Status gemm(const GemmArgs &args) = 0;
  /// FP8 quantization (`out` FP8) or dequantization (`in` FP8) of a block of
  /// rows of the same shape, moecommQuantizeFp8's rounding.
  virtual Status convertRows(const moecommRows_t &in,
                             const moecommRows_t &out) = 0;
  /// The stream collectives and staged primitives are given.
  virtual moecommStream_t stream() const = 0;
};

/// The host device: 256-byte aligned host memory, every primitive run at
/// once on the calling thread (memcpy / memset, OpenBLAS, moecommQuantizeFp8).
/// Stateless, shared by every thread; also what allocates compiled code's
/// host metadata (moecomm_rt_alloc with device 0) on any device.
std::shared_ptr<CompiledDevice> hostDevice();

#ifdef MOECOMM_HAVE_NCCL
/// The CUDA device of nccl communicator `comm`, working on `stream`
/// (cudaStream_t, NULL = the legacy default stream): cudaMallocAsync /
/// cudaFreeAsync, cudaMemcpy2DAsync / cudaMemset2DAsync, cuBLAS sgemm and the
/// backend's FP8 kernels (moecommQuantizeFp8Device), all on `stream`.
/// SystemError when cuBLAS or CUDA cannot start.
Status makeCudaCompiledDevice(Comm &comm, moecommStream_t stream,
                              std::shared_ptr<CompiledDevice> &out);
#endif

} // namespace moecomm

#endif // MOECOMM_LIB_COMPILEDDEVICE_H
