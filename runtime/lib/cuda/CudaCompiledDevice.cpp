//===- CudaCompiledDevice.cpp - The CUDA device of the compiled ABI -------===//
//
// The device of a thread bound with moecommCompiledBindDevice to an nccl
// communicator (CompiledDevice.h): every primitive is enqueued on the bound
// stream of the communicator's device and returns without waiting, so
// compiled code's copies, fills, GEMMs and FP8 casts are ordered with the
// collectives the runtime enqueues on the same stream. Memory comes from
// CUDA's stream-ordered allocator (cudaMallocAsync: freed without a host
// synchronization). The GEMM is cuBLAS's sgemm in FP32 math: row-major
// C = A op(B) is column-major C^T = op(B)^T A^T, i.e. sgemm with the
// operands swapped and the same leading dimensions.
//
//===----------------------------------------------------------------------===//

#include "ApiBoundary.h"
#include "Comm.h"
#include "CompiledDevice.h"
#include "CudaCheck.h"
#include "NcclBackend.h"
#include "moecomm/Model/WireFormat.h"
#include "moecomm/moecomm_nccl.h"

#include <cublas_v2.h>

namespace moecomm {
namespace {

Status cublasStatus(cublasStatus_t st, const char *what) {
  if (st == CUBLAS_STATUS_SUCCESS)
    return Status::success();
  return systemError(cat(what, " failed: ", cublasGetStatusName(st), " (",
                         cublasGetStatusString(st), ")"));
}

class CudaCompiledDevice final : public CompiledDevice {
public:
  CudaCompiledDevice(Comm &comm, int device, cudaStream_t stream)
      : comm_(comm), device_(device), stream_(stream) {}
  ~CudaCompiledDevice() override {
    if (handle_) {
      cuda::DeviceGuard guard(device_);
      (void)cublasDestroy(handle_);
    }
  }

  /// Creates the cuBLAS handle, on `stream`, in FP32 math (no TF32).
  Status start() {
    cuda::DeviceGuard guard(device_);
    if (!guard.status().ok())
      return guard.status();
    if (Status st = cublasStatus(cublasCreate(&handle_), "cublasCreate");
        !st.ok())
      return st;
    if (Status st =
            cublasStatus(cublasSetStream(handle_, stream_), "cublasSetStream");
        !st.ok())
      return st;
    return cublasStatus(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH),
                        "cublasSetMathMode");
  }

  Status allocate(int64_t bytes, void *&ptr) override {
    cuda::DeviceGuard guard(device_);
    if (!guard.status().ok())
      return guard.status();
    cudaError_t err = cudaMallocAsync(&ptr, size_t(bytes), stream_);
    if (err != cudaSuccess)
      return cuda::cudaStatus(
          err, cat("cudaMallocAsync of ", bytes, " bytes").c_str());
    return Status::success();
  }
  Status free(void *ptr) override {
    cuda::DeviceGuard guard(device_);
    return cuda::cudaStatus(cudaFreeAsync(ptr, stream_), "cudaFreeAsync");
  }
  Status copy2D(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
                int64_t widthBytes, int64_t height) override {
    cuda::DeviceGuard guard(device_);
    return cuda::cudaStatus(
        cudaMemcpy2DAsync(dst, size_t(dstPitch), src, size_t(srcPitch),
                          size_t(widthBytes), size_t(height), cudaMemcpyDefault,
                          stream_),
        "cudaMemcpy2DAsync");
  }
  Status zero2D(void *dst, int64_t pitch, int64_t widthBytes,
                int64_t height) override {
    cuda::DeviceGuard guard(device_);
    return cuda::cudaStatus(cudaMemset2DAsync(dst, size_t(pitch), 0,
                                              size_t(widthBytes),
                                              size_t(height), stream_),
                            "cudaMemset2DAsync");
  }
  Status synchronize() override {
    cuda::DeviceGuard guard(device_);
    return cuda::cudaStatus(cudaStreamSynchronize(stream_),
                            "cudaStreamSynchronize");
  }
  Status gemm(const GemmArgs &g) override {
    cuda::DeviceGuard guard(device_);
    const float one = 1.0f;
    // C^T [n][m] (column-major) += op(B)^T [n][k] x A^T [k][m].
    return cublasStatus(
        cublasSgemm(handle_, g.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N,
                    CUBLAS_OP_N, int(g.n), int(g.m), int(g.k), &one, g.b,
                    int(g.ldb), g.a, int(g.lda), &one, g.c, int(g.ldc)),
        "cublasSgemm");
  }
  Status convertRows(const moecommRows_t &in,
                     const moecommRows_t &out) override {
    // The backend's kernels, through its checked entry points.
    auto *comm = static_cast<moecommComm_t>(&comm_);
    moecommRows_t to = out;
    moecommResult_t r =
        isFp8(out.type) ? moecommQuantizeFp8Device(comm, &in, &to, stream_)
                        : moecommDequantizeFp8Device(comm, &in, &to, stream_);
    return r == moecommSuccess ? Status::success() : threadLastFailure();
  }
  moecommStream_t stream() const override { return stream_; }

private:
  Comm &comm_;
  int device_;
  cudaStream_t stream_;
  cublasHandle_t handle_ = nullptr;
};

} // namespace

Status makeCudaCompiledDevice(Comm &comm, moecommStream_t stream,
                              std::shared_ptr<CompiledDevice> &out) {
  int device = 0;
  if (Status st = ncclDeviceOf(comm.transport(), device); !st.ok())
    return st;
  auto made = std::make_shared<CudaCompiledDevice>(
      comm, device, static_cast<cudaStream_t>(stream));
  if (Status st = made->start(); !st.ok())
    return st;
  out = std::move(made);
  return Status::success();
}

} // namespace moecomm
