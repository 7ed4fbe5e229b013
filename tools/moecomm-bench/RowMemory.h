//===- RowMemory.h - where a measured rank's rows live ----------*- C++ -*-===//
//
// The measuring path (Measure.h) runs one program per rank for every
// backend; only where its rows live and how it waits for its work differ:
//   host:   the CPU backends (threads, mpi). Rows are host memory, copies
//           are memcpy, the runtime's calls return when their work is done,
//           and `stream` is NULL.
//   device: the GPU backend (nccl, docs/gpu.md). Rows are cudaMalloc'd
//           memory of the communicator's device, copies are cudaMemcpy, the
//           calls enqueue on a stream of that device and return: a timed
//           region ends with synchronize() (cudaStreamSynchronize), so it
//           holds the GPU work and not just the enqueueing - the timing
//           DeepEP's tests use (their `bench` synchronizes around the calls).
// Built with CUDA only where the runtime is (MOECOMM_HAVE_NCCL).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_ROWMEMORY_H
#define MOECOMM_TOOLS_BENCH_ROWMEMORY_H

#include "moecomm/moecomm.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <memory>

namespace moecomm::bench {

/// One rank's row memory and stream (see the file comment). Not thread-safe:
/// one per rank, used by that rank's thread. Errors are io_error (exit
/// status 3) naming the failed call and the rank.
class RowMemory {
public:
  virtual ~RowMemory();
  /// `bytes` of row memory, released by release() or with this object.
  virtual llvm::Expected<void *> allocate(size_t bytes) = 0;
  /// Frees memory of allocate() (nullptr: nothing).
  virtual void release(void *rows) = 0;
  /// Copies `bytes` from host memory into rows of allocate().
  virtual llvm::Error upload(void *rows, const void *host, size_t bytes) = 0;
  /// Copies `bytes` from rows of allocate() into host memory; the work
  /// enqueued before it is complete first.
  virtual llvm::Error download(void *host, const void *rows, size_t bytes) = 0;
  /// Returns when the work enqueued on stream() is complete.
  virtual llvm::Error synchronize() = 0;
  /// The stream the runtime's calls take (a cudaStream_t; NULL on the host).
  virtual void *stream() const = 0;
};

/// Host memory (threads and mpi backends).
std::unique_ptr<RowMemory> makeHostRowMemory();

#ifdef MOECOMM_HAVE_NCCL
/// Memory and a new non-blocking stream on the CUDA device of `comm` (an
/// nccl communicator: moecommCommCudaDevice) for rank `rank`; the calling
/// thread's current device becomes that device. Errors: io_error naming the
/// CUDA call.
llvm::Expected<std::unique_ptr<RowMemory>>
makeDeviceRowMemory(moecommComm_t comm, int rank);
#endif

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_ROWMEMORY_H
