//===- RowMemory.cpp - host and device row memory of a measured rank ------===//

#include "RowMemory.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>
#include <vector>

#ifdef MOECOMM_HAVE_NCCL
#include "moecomm/moecomm_nccl.h"
#include <cuda_runtime_api.h>
#endif

using namespace llvm;

namespace moecomm::bench {

RowMemory::~RowMemory() = default;

namespace {

// Every allocation has at least one byte, so that an empty buffer still has
// an address of its kind (the nccl backend refuses host pointers, also for
// zero rows).
size_t atLeastOne(size_t bytes) { return std::max<size_t>(bytes, 1); }

class HostRowMemory : public RowMemory {
public:
  Expected<void *> allocate(size_t bytes) override {
    blocks.push_back(std::make_unique<uint8_t[]>(atLeastOne(bytes)));
    return blocks.back().get();
  }
  void release(void *rows) override {
    llvm::erase_if(blocks, [&](const std::unique_ptr<uint8_t[]> &b) {
      return b.get() == rows;
    });
  }
  // An empty host vector's data() may be null, which memcpy may not get.
  Error upload(void *rows, const void *host, size_t bytes) override {
    if (bytes)
      std::memcpy(rows, host, bytes);
    return Error::success();
  }
  Error download(void *host, const void *rows, size_t bytes) override {
    if (bytes)
      std::memcpy(host, rows, bytes);
    return Error::success();
  }
  Error synchronize() override { return Error::success(); }
  void *stream() const override { return nullptr; }

private:
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
};

#ifdef MOECOMM_HAVE_NCCL
class DeviceRowMemory : public RowMemory {
public:
  DeviceRowMemory(int rank, cudaStream_t s) : rank(rank), s(s) {}
  ~DeviceRowMemory() override {
    for (void *p : blocks)
      cudaFree(p);
    cudaStreamDestroy(s);
  }
  Expected<void *> allocate(size_t bytes) override {
    void *p = nullptr;
    if (Error e = check(cudaMalloc(&p, atLeastOne(bytes)), "cudaMalloc"))
      return std::move(e);
    blocks.push_back(p);
    return p;
  }
  void release(void *rows) override {
    if (!rows)
      return;
    llvm::erase(blocks, rows);
    cudaFree(rows);
  }
  Error upload(void *rows, const void *host, size_t bytes) override {
    return check(cudaMemcpy(rows, host, bytes, cudaMemcpyHostToDevice),
                 "cudaMemcpy (host to device)");
  }
  Error download(void *host, const void *rows, size_t bytes) override {
    // cudaMemcpy does not wait for a non-blocking stream.
    if (Error e = synchronize())
      return e;
    return check(cudaMemcpy(host, rows, bytes, cudaMemcpyDeviceToHost),
                 "cudaMemcpy (device to host)");
  }
  Error synchronize() override {
    return check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  void *stream() const override { return s; }

  static Error check(cudaError_t err, StringRef call, int rank) {
    if (err == cudaSuccess)
      return Error::success();
    (void)cudaGetLastError();
    return workload::systemError(formatv("rank {0}: {1} failed: {2}: {3}", rank,
                                         call, cudaGetErrorName(err),
                                         cudaGetErrorString(err)));
  }

private:
  Error check(cudaError_t err, StringRef call) const {
    return check(err, call, rank);
  }
  int rank;
  cudaStream_t s;
  std::vector<void *> blocks;
};
#endif

} // namespace

std::unique_ptr<RowMemory> makeHostRowMemory() {
  return std::make_unique<HostRowMemory>();
}

#ifdef MOECOMM_HAVE_NCCL
Expected<std::unique_ptr<RowMemory>> makeDeviceRowMemory(moecommComm_t comm,
                                                         int rank) {
  int device = 0;
  if (moecommCommCudaDevice(comm, &device) != moecommSuccess)
    return workload::systemError(formatv("rank {0}: moecommCommCudaDevice: {1}",
                                         rank, moecommCommGetLastError(comm)));
  if (Error e =
          DeviceRowMemory::check(cudaSetDevice(device), "cudaSetDevice", rank))
    return std::move(e);
  cudaStream_t s = nullptr;
  if (Error e = DeviceRowMemory::check(
          cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags", rank))
    return std::move(e);
  return std::unique_ptr<RowMemory>(std::make_unique<DeviceRowMemory>(rank, s));
}
#endif

} // namespace moecomm::bench
