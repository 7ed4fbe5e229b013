//===- DeviceCallBuffers.cpp - a graph call's memory on a device --------===//

#include "DeviceCallBuffers.h"

#include "moecomm/moecomm_compiled.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace moecomm::run {

DeviceCallBuffers::~DeviceCallBuffers() { release(); }

void *DeviceCallBuffers::place(const void *host, size_t bytes) {
  void *buffer = nullptr;
  if (moecommCompiledDeviceAlloc(bytes, &buffer) != moecommSuccess) {
    placed = false;
    return nullptr;
  }
  if (!buffer)
    return nullptr; // 0 bytes
  buffers.push_back(buffer);
  if (moecommCompiledDeviceCopy(buffer, host, bytes) != moecommSuccess) {
    placed = false;
    return nullptr;
  }
  return buffer;
}

void *DeviceCallBuffers::fetch(void *allocated, const void *data,
                               size_t bytes) {
  adopt(allocated);
  if (bytes == 0)
    return nullptr;
  hostCopies.push_back(std::make_unique<char[]>(bytes));
  char *copy = hostCopies.back().get();
  if (moecommCompiledDeviceCopy(copy, data, bytes) != moecommSuccess)
    return nullptr;
  return copy;
}

void DeviceCallBuffers::adopt(void *allocated) {
  if (allocated)
    buffers.push_back(allocated);
}

void DeviceCallBuffers::release() {
  llvm::sort(buffers);
  buffers.erase(std::unique(buffers.begin(), buffers.end()), buffers.end());
  // A failure is recorded in the compiled status; the other buffers are
  // still freed.
  for (void *buffer : buffers)
    moecommCompiledFree(buffer);
  buffers.clear();
}

} // namespace moecomm::run
