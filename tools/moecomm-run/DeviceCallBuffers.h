//===- DeviceCallBuffers.h - a graph call's memory on a device -*- C++ -*-===//
//
// The driver's side of the device form of the compiled ABI
// (moecomm_compiled.h, "The device form"; docs/pipeline.md, "The cuda
// target"): a graph compiled with target=cuda takes its arguments in device
// memory and returns results that may be device or host memory. On a thread
// bound with moecommCompiledBindDevice, this places each argument in a device
// buffer (moecommCompiledDeviceAlloc + moecommCompiledDeviceCopy), brings
// each result back to host memory (moecommCompiledDeviceCopy, which takes
// either), and frees arguments and results (moecommCompiledFree), each
// buffer once. Every driver call records its failure in the thread's
// compiled status (moecommCompiledStatus), which the caller reads.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_DEVICECALLBUFFERS_H
#define MOECOMM_TOOLS_RUN_DEVICECALLBUFFERS_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace moecomm::run {

class DeviceCallBuffers {
public:
  DeviceCallBuffers() = default;
  DeviceCallBuffers(const DeviceCallBuffers &) = delete;
  DeviceCallBuffers &operator=(const DeviceCallBuffers &) = delete;
  /// Frees what release() has not.
  ~DeviceCallBuffers();

  /// A new device buffer holding the `bytes` at `host`; nullptr for 0 bytes
  /// or when a driver call failed (see ok()).
  void *place(const void *host, size_t bytes);
  /// Whether every place() so far succeeded.
  bool ok() const { return placed; }

  /// A host copy of `bytes` at `data` (device or host memory), valid while
  /// this object lives; nullptr for 0 bytes or when the copy failed (the
  /// thread's compiled status says why). `allocated` (the result
  /// descriptor's buffer) is freed by release().
  void *fetch(void *allocated, const void *data, size_t bytes);
  /// Marks `allocated`, a buffer a graph returned, to be freed by release()
  /// without copying it (results left unread after a failed call).
  void adopt(void *allocated);

  /// Frees every buffer placed or adopted (fetch() adopts), each distinct
  /// address once (a graph may return an argument, or two views of one
  /// buffer), with moecommCompiledFree.
  void release();

private:
  std::vector<void *> buffers;
  std::vector<std::unique_ptr<char[]>> hostCopies;
  bool placed = true;
};

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_DEVICECALLBUFFERS_H
