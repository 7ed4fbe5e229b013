//===- CompiledBuffers.h - Buffers of device-form compiled code -*- C++ -*-===//
//
// The bookkeeping the CUDA device and the host device share
// (moecomm_compiled.h, "The device form"): per thread, the bound device, the
// live buffers compiled code and its driver allocated (address, bytes, device
// or host memory, and the device that frees them), and the exchanges
// compiled code started and has not waited (request -> the buffers of its
// rows). The entry points (CompiledAbi.cpp, Matmul.cpp) check their rows
// against it; moecomm_rt_alloc / moecomm_rt_free / copies / fills and the
// driver calls are defined in CompiledBuffers.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_COMPILEDBUFFERS_H
#define MOECOMM_LIB_COMPILEDBUFFERS_H

#include "CompiledDevice.h"
#include "Status.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <string>

namespace moecomm {

/// Makes `comm`'s device (the CUDA device on an nccl communicator, else the
/// host device, which needs `stream` NULL) this thread's, working on
/// `stream`; comm NULL unbinds it (moecommCompiledBind). Buffers allocated
/// before stay registered and are freed by the device that allocated them.
/// InvalidArgument (a stream on a CPU backend), SystemError (CUDA / cuBLAS
/// cannot start); the thread then has no device.
Status bindCompiledDevice(Comm *comm, moecommStream_t stream);

/// This thread's device, nullptr unless bound with moecommCompiledBindDevice.
CompiledDevice *boundDevice();

/// InvalidArgument "<what> ... is not device memory ..." unless
/// [p, p + bytes) lies inside one device buffer of this thread (bytes <= 0
/// passes).
Status checkDeviceMemory(const void *p, int64_t bytes, const std::string &what);

/// The data (and FP8 scales) of `rows` checked by checkDeviceMemory; `what`
/// names them ("exchange send rows", ...).
Status checkDeviceRows(const moecommRows_t &rows, const std::string &what);

/// Whether [p, p + bytes) lies inside a device buffer of this thread (a
/// compiled code's vector that the host reads through the device).
bool inDeviceBuffer(const void *p, int64_t bytes);

/// Records that compiled code started exchange `request` (`what`: e.g.
/// "dispatch stage 0") on `send` and `recv`: until
/// completeExchange(request), freeing the buffers they lie in is an error.
void startExchange(void *request, const std::string &what,
                   const moecommRows_t &send, const moecommRows_t &recv);
/// moecomm_rt_wait of `request` (unknown requests are ignored).
void completeExchange(void *request);

} // namespace moecomm

#endif // MOECOMM_LIB_COMPILEDBUFFERS_H
