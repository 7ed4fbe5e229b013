//===- CompiledBuffers.cpp - Buffers of device-form compiled code ---------===//
//
// moecomm_rt_alloc / moecomm_rt_free / moecomm_rt_copy_<T> /
// moecomm_rt_fill_zero_<T> (what moecomm-device-buffers turns memref.alloc,
// memref.dealloc, memref.copy and zero fills into), the driver's buffer
// calls (moecommCompiledDeviceAlloc ...), and the per-thread registry both
// devices share (CompiledBuffers.h). The registry is what lets one CPU run
// check what a GPU could not tell cheaply: that rows handed to the runtime
// lie in device buffers, that no buffer is freed under a started exchange,
// that every started exchange is waited.
//
//===----------------------------------------------------------------------===//

#include "CompiledBuffers.h"
#include "Comm.h"
#include "CompiledError.h"
#include "RowKernels.h"
#include "moecomm/Model/Sizes.h"
#include "moecomm/Model/WireFormat.h"
#include "moecomm/moecomm_compiled.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace moecomm;

namespace {

/// A live buffer of this thread.
struct Buffer {
  int64_t bytes = 0;
  /// Device memory (moecomm_rt_alloc device 1, moecommCompiledDeviceAlloc);
  /// else host metadata (device 0).
  bool device = false;
  /// What allocated it and frees it (the device bound then).
  std::shared_ptr<CompiledDevice> owner;
};

/// An exchange compiled code started and has not waited.
struct Pending {
  void *request = nullptr;
  std::string what; ///< e.g. "dispatch stage 0"
  /// The buffers its rows lie in, with the rows' role ("send rows", ...).
  std::vector<std::pair<uintptr_t, const char *>> buffers;
};

struct ThreadState {
  std::shared_ptr<CompiledDevice> device;
  std::map<uintptr_t, Buffer> live;
  std::vector<Pending> pending; ///< in start order
  /// A thread that ends with live buffers (a driver that stopped early)
  /// does not leak them.
  ~ThreadState() {
    for (auto &[address, buffer] : live)
      buffer.owner->free(reinterpret_cast<void *>(address));
  }
};

thread_local ThreadState state;

/// The live buffer [p, p + bytes) lies in, or live.end().
std::map<uintptr_t, Buffer>::iterator containing(const void *p, int64_t bytes) {
  auto address = reinterpret_cast<uintptr_t>(p);
  auto it = state.live.upper_bound(address);
  if (it == state.live.begin())
    return state.live.end();
  --it;
  uint64_t at = address - it->first;
  if (at <= uint64_t(it->second.bytes) &&
      uint64_t(bytes) <= uint64_t(it->second.bytes) - at)
    return it;
  return state.live.end();
}

/// Records a failure of compiled code or a driver call; returns its code.
moecommResult_t record(const Status &st) {
  if (!st.ok())
    compiledFail(st.code, st.message);
  return st.code;
}

Status noDevice(const char *call) {
  return invalidArgument(cat(call, ": no device is bound to this thread; "
                                   "call moecommCompiledBindDevice"));
}

/// Allocates and registers `bytes` (> 0) of device memory (`device`) or host
/// metadata.
Status allocate(int64_t bytes, bool device, void *&ptr) {
  std::shared_ptr<CompiledDevice> owner = device ? state.device : hostDevice();
  if (Status st = owner->allocate(bytes, ptr); !st.ok())
    return st;
  state.live[reinterpret_cast<uintptr_t>(ptr)] = Buffer{bytes, device, owner};
  return Status::success();
}

/// Frees a live buffer at `ptr` (`call` names the caller in errors). A
/// buffer a started exchange still uses is kept (an error, not a
/// use after free).
Status release(void *ptr, const char *call) {
  auto it = state.live.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == state.live.end())
    return invalidArgument(cat(call, " of ", ptr,
                               ", which is not a live buffer of this thread "
                               "(moecomm_rt_alloc, "
                               "moecommCompiledDeviceAlloc)"));
  for (const Pending &p : state.pending)
    for (const auto &[base, role] : p.buffers)
      if (base == it->first)
        return invalidArgument(
            cat(call, " of ", ptr, " (", it->second.bytes, " bytes), the ",
                role, " of the ", p.what,
                " exchange compiled code started and has not waited "
                "(moecomm_rt_wait): the buffer is kept"));
  Status st = it->second.owner->free(ptr);
  state.live.erase(it);
  return st;
}

/// A ranked memref passed unranked: {allocated, aligned, offset,
/// sizes[rank], strides[rank]}.
struct View {
  char *base = nullptr; ///< element 0 (aligned + offset)
  int64_t rank = 0;
  const int64_t *sizes = nullptr, *strides = nullptr;
};

struct DescriptorHead {
  void *allocated;
  void *aligned;
  int64_t offset;
};

/// Reads `m` (named `what`) for elements of `elem` bytes; records why not.
bool viewOf(const moecommUnrankedMemRef *m, int64_t elem, const char *what,
            View &v) {
  if (!m || !m->descriptor || m->rank < 0) {
    compiledFail(moecommInvalidArgument,
                 cat("compiled code passed no memref (or a negative rank) "
                     "for the ",
                     what));
    return false;
  }
  const auto *head = static_cast<const DescriptorHead *>(m->descriptor);
  v.rank = m->rank;
  v.sizes = reinterpret_cast<const int64_t *>(head + 1);
  v.strides = v.sizes + v.rank;
  v.base = static_cast<char *>(head->aligned) + head->offset * elem;
  for (int64_t d = 0; d < v.rank; ++d)
    if (v.sizes[d] < 0 || v.strides[d] < 0) {
      compiledFail(moecommInvalidArgument,
                   cat("compiled code passed the ", what, " with size ",
                       v.sizes[d], " and stride ", v.strides[d],
                       " in dimension ", d,
                       " (sizes and strides must be >= 0)"));
      return false;
    }
  return true;
}

/// "[d0][d1]..." ("[]" for rank 0).
std::string shapeOf(const View &v) {
  std::string shape = v.rank ? "" : "[]";
  for (int64_t d = 0; d < v.rank; ++d)
    shape += cat("[", v.sizes[d], "]");
  return shape;
}

/// Whether a view has no element.
bool empty(const View &v) {
  for (int64_t d = 0; d < v.rank; ++d)
    if (v.sizes[d] == 0)
      return true;
  return false;
}

/// Where [p, p + bytes) lives: `device` when in a device buffer. A range
/// that touches no live buffer is host memory the graph did not allocate
/// (its constants, memref.get_global); one that runs past the end of the
/// buffer it starts in, or starts before a buffer and runs into it, is an
/// error naming `what`.
Status placeOfRange(const char *p, int64_t bytes, const std::string &what,
                    bool &device) {
  device = false;
  auto it = containing(p, 1);
  if (it != state.live.end()) {
    if (containing(p, bytes) != it)
      return invalidArgument(cat(
          what, " at ", static_cast<const void *>(p), " (", bytes,
          " bytes), which runs past the end of its buffer (",
          reinterpret_cast<const void *>(it->first), ", ", it->second.bytes,
          " bytes)"));
    device = it->second.device;
    return Status::success();
  }
  auto next = state.live.upper_bound(reinterpret_cast<uintptr_t>(p));
  if (next != state.live.end() &&
      next->first - reinterpret_cast<uintptr_t>(p) < uint64_t(bytes))
    return invalidArgument(cat(
        what, " at ", static_cast<const void *>(p), " (", bytes,
        " bytes), which starts before the buffer at ",
        reinterpret_cast<const void *>(next->first), " (", next->second.bytes,
        " bytes) and runs into it"));
  return Status::success();
}

/// Where non-empty `v` lives (placeOfRange over the bytes from its first to
/// its last element); records why not (`what` names it) and returns false.
bool placeOf(const View &v, int64_t elem, const char *what, bool &device) {
  // The last element's offset, overflow-checked (strides may be huge).
  int64_t last = 0, bytes = 0;
  bool fits = true;
  for (int64_t d = 0; d < v.rank && fits; ++d) {
    int64_t step = 0;
    fits = checkedMul(v.sizes[d] - 1, v.strides[d], step) &&
           checkedAdd(last, step, last);
  }
  fits = fits && checkedAdd(last, 1, last) && checkedMul(last, elem, bytes);
  if (!fits) {
    compiledFail(moecommInvalidArgument,
                 cat("compiled code passed the ", what, " ", shapeOf(v),
                     " with strides spanning more than 2^63 - 1 bytes"));
    return false;
  }
  Status st = placeOfRange(v.base, bytes, cat("compiled code passed the ", what),
                           device);
  if (!st.ok())
    compiledFail(st.code, st.message);
  return st.ok();
}

/// A copy or fill of a view as 2-D blocks: rows of `width` bytes (the
/// innermost dimension when both sides have stride 1 there, else one
/// element), `height` of them along dimension `heightDim` (-1: one row) at
/// its pitches, once for every index of dimensions [0, loopDims).
struct Blocks {
  int64_t width = 0, height = 1;
  int64_t heightDim = -1, loopDims = 0;
};

Blocks blocksOf(const View &dst, const View *src, int64_t elem) {
  Blocks b;
  const int64_t r = dst.rank;
  int64_t outer = r;
  b.width = elem;
  if (r > 0 &&
      (dst.sizes[r - 1] == 1 ||
       (dst.strides[r - 1] == 1 && (!src || src->strides[r - 1] == 1)))) {
    b.width = dst.sizes[r - 1] * elem;
    outer = r - 1;
  }
  b.loopDims = outer;
  // The next dimension out becomes the rows of the block when its pitches
  // do not overlap a row (CUDA's 2-D copies need pitch >= width).
  if (outer > 0) {
    int64_t d = outer - 1;
    if (dst.sizes[d] == 1 || (dst.strides[d] * elem >= b.width &&
                              (!src || src->strides[d] * elem >= b.width))) {
      b.heightDim = d;
      b.height = dst.sizes[d];
      b.loopDims = d;
    }
  }
  return b;
}

/// Calls block(dstOffset, srcOffset) (in elements) for every index of the
/// dimensions [0, b.loopDims) of non-empty views.
template <typename Block>
Status forEachBlock(const View &dst, const View *src, const Blocks &b,
                    Block block) {
  std::vector<int64_t> index(b.loopDims, 0);
  while (true) {
    int64_t dstAt = 0, srcAt = 0;
    for (int64_t d = 0; d < b.loopDims; ++d) {
      dstAt += index[d] * dst.strides[d];
      if (src)
        srcAt += index[d] * src->strides[d];
    }
    if (Status st = block(dstAt, srcAt); !st.ok())
      return st;
    int64_t d = b.loopDims - 1;
    for (; d >= 0; --d) {
      if (++index[d] < dst.sizes[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return Status::success();
  }
}

/// The device that runs a copy or fill: the host device when it touches
/// only host memory (a CUDA device cannot memset host memory), else the
/// bound device.
CompiledDevice &deviceFor(bool touchesDevice) {
  return touchesDevice ? *state.device : *hostDevice();
}

/// memref.copy of `src` into `dst` (same shape), elements of `elem` bytes.
void copyMemRef(moecommUnrankedMemRef *src, moecommUnrankedMemRef *dst,
                int64_t elem) {
  if (compiledStopped())
    return;
  if (!state.device) {
    record(noDevice("moecomm_rt_copy"));
    return;
  }
  View s, d;
  if (!viewOf(src, elem, "copy source", s) ||
      !viewOf(dst, elem, "copy destination", d))
    return;
  bool same = s.rank == d.rank;
  for (int64_t i = 0; same && i < s.rank; ++i)
    same = s.sizes[i] == d.sizes[i];
  if (!same) {
    compiledFail(moecommInvalidArgument,
                 cat("compiled code copied a memref of shape ", shapeOf(s),
                     " into one of shape ", shapeOf(d)));
    return;
  }
  if (empty(d))
    return;
  bool fromDevice = false, toDevice = false;
  if (!placeOf(s, elem, "copy source", fromDevice) ||
      !placeOf(d, elem, "copy destination", toDevice))
    return;
  CompiledDevice &device = deviceFor(fromDevice || toDevice);
  Blocks b = blocksOf(d, &s, elem);
  int64_t dstPitch = b.heightDim >= 0 ? d.strides[b.heightDim] * elem : b.width;
  int64_t srcPitch = b.heightDim >= 0 ? s.strides[b.heightDim] * elem : b.width;
  if (b.height <= 1)
    dstPitch = srcPitch = b.width;
  record(forEachBlock(d, &s, b, [&](int64_t dstAt, int64_t srcAt) {
    return device.copy2D(d.base + dstAt * elem, dstPitch, s.base + srcAt * elem,
                         srcPitch, b.width, b.height);
  }));
}

/// A zero linalg.fill of `dst`, elements of `elem` bytes.
void fillZero(moecommUnrankedMemRef *dst, int64_t elem) {
  if (compiledStopped())
    return;
  if (!state.device) {
    record(noDevice("moecomm_rt_fill_zero"));
    return;
  }
  View d;
  if (!viewOf(dst, elem, "filled memref", d) || empty(d))
    return;
  bool toDevice = false;
  if (!placeOf(d, elem, "filled memref", toDevice))
    return;
  CompiledDevice &device = deviceFor(toDevice);
  Blocks b = blocksOf(d, nullptr, elem);
  int64_t pitch = b.heightDim >= 0 && b.height > 1
                      ? d.strides[b.heightDim] * elem
                      : b.width;
  record(forEachBlock(d, nullptr, b, [&](int64_t dstAt, int64_t) {
    return device.zero2D(d.base + dstAt * elem, pitch, b.width, b.height);
  }));
}

} // namespace

//===----------------------------------------------------------------------===//
// CompiledBuffers.h
//===----------------------------------------------------------------------===//

Status moecomm::bindCompiledDevice(Comm *comm, moecommStream_t stream) {
  state.device.reset();
  if (!comm)
    return Status::success();
  if (!comm->transport().deviceEngine()) {
    if (stream)
      return invalidArgument("moecommCompiledBindDevice: a stream was given "
                             "for a communicator of a CPU backend (its "
                             "device is the host device: pass NULL)");
    state.device = hostDevice();
    return Status::success();
  }
#ifdef MOECOMM_HAVE_NCCL
  return makeCudaCompiledDevice(*comm, stream, state.device);
#else
  return internalError("a device backend in a build without CUDA");
#endif
}

CompiledDevice *moecomm::boundDevice() { return state.device.get(); }

Status moecomm::checkDeviceMemory(const void *p, int64_t bytes,
                                  const std::string &what) {
  if (bytes <= 0)
    return Status::success();
  auto it = containing(p, bytes);
  if (it != state.live.end() && it->second.device)
    return Status::success();
  return invalidArgument(
      cat("compiled code passed ", what, " (", bytes, " bytes at ", p,
          ") that are not device memory: ",
          it == state.live.end()
              ? "not inside a device buffer of this thread (moecomm_rt_alloc "
                "with device 1, moecommCompiledDeviceAlloc); is it a host "
                "graph run on a device-bound thread?"
              : "inside a host buffer (moecomm_rt_alloc with device 0)"));
}

Status moecomm::checkDeviceRows(const moecommRows_t &rows,
                                const std::string &what) {
  int64_t elements = rows.rows * rows.hidden;
  if (Status st =
          checkDeviceMemory(rows.data, elements * elementSize(rows.type), what);
      !st.ok())
    return st;
  if (!isFp8(rows.type))
    return Status::success();
  return checkDeviceMemory(rows.scales,
                           rows.rows * fp8ScaleRowBytes(rows.type, rows.hidden),
                           what + " scales");
}

bool moecomm::inDeviceBuffer(const void *p, int64_t bytes) {
  auto it = containing(p, bytes);
  return it != state.live.end() && it->second.device;
}

void moecomm::startExchange(void *request, const std::string &what,
                            const moecommRows_t &send,
                            const moecommRows_t &recv) {
  Pending p;
  p.request = request;
  p.what = what;
  auto add = [&](const moecommRows_t &rows, const void *at, int64_t bytes,
                 const char *role) {
    auto it = containing(at, bytes);
    if (at && rows.rows > 0 && it != state.live.end())
      p.buffers.emplace_back(it->first, role);
  };
  for (bool isSend : {true, false}) {
    const moecommRows_t &rows = isSend ? send : recv;
    add(rows, rows.data, rows.rows * rows.hidden * elementSize(rows.type),
        isSend ? "send rows" : "recv rows");
    if (isFp8(rows.type))
      add(rows, rows.scales,
          rows.rows * fp8ScaleRowBytes(rows.type, rows.hidden),
          isSend ? "send scales" : "recv scales");
  }
  state.pending.push_back(std::move(p));
}

void moecomm::completeExchange(void *request) {
  for (auto it = state.pending.begin(); it != state.pending.end(); ++it)
    if (it->request == request) {
      state.pending.erase(it);
      return;
    }
}

//===----------------------------------------------------------------------===//
// moecomm_compiled.h
//===----------------------------------------------------------------------===//

extern "C" {

// Allocates even on a stopped thread: the graph's own code still runs and
// touches its buffers.
void _mlir_ciface_moecomm_rt_alloc(moecommMemRef1D *result, int64_t bytes,
                                   int32_t device) {
  *result = moecommMemRef1D{nullptr, nullptr, 0, {bytes > 0 ? bytes : 0}, {1}};
  if (bytes < 0) {
    record(invalidArgument(
        cat("compiled code allocated a buffer of ", bytes, " bytes")));
    return;
  }
  if (bytes == 0)
    return;
  bool onDevice = device != 0;
  if (onDevice && !state.device) {
    // Host memory keeps the graph's own code from crashing; the error stops
    // the runtime calls.
    record(noDevice("moecomm_rt_alloc"));
    onDevice = false;
  }
  void *ptr = nullptr;
  if (record(allocate(bytes, onDevice, ptr)) != moecommSuccess)
    return;
  result->allocated = result->aligned = ptr;
}

// Frees even on a stopped thread (but keeps a buffer a started exchange
// uses); only the first error is recorded.
void moecomm_rt_free(void *address) {
  if (address)
    record(release(address, "moecomm_rt_free"));
}

moecommResult_t moecommCompiledDeviceAlloc(size_t bytes, void **ptr) {
  if (!ptr)
    return record(invalidArgument("moecommCompiledDeviceAlloc: ptr is NULL"));
  *ptr = nullptr;
  if (!state.device)
    return record(noDevice("moecommCompiledDeviceAlloc"));
  if (bytes > size_t(INT64_MAX))
    return record(systemError(cat("out of memory: moecommCompiledDeviceAlloc "
                                  "of ",
                                  bytes, " bytes")));
  if (bytes == 0)
    return moecommSuccess;
  return record(allocate(int64_t(bytes), true, *ptr));
}

moecommResult_t moecommCompiledFree(void *ptr) {
  if (!state.device)
    return record(noDevice("moecommCompiledFree"));
  if (!ptr)
    return moecommSuccess;
  return record(release(ptr, "moecommCompiledFree"));
}

moecommResult_t moecommCompiledDeviceCopy(void *dst, const void *src,
                                          size_t bytes) {
  if (!state.device)
    return record(noDevice("moecommCompiledDeviceCopy"));
  if (bytes == 0)
    return moecommSuccess;
  if (!dst || !src)
    return record(
        invalidArgument(cat("moecommCompiledDeviceCopy: ", !dst ? "dst" : "src",
                            " is NULL for ", bytes, " bytes")));
  if (bytes > size_t(INT64_MAX))
    return record(
        invalidArgument(cat("moecommCompiledDeviceCopy: ", bytes, " bytes")));
  const int64_t n = int64_t(bytes);
  bool device = false;
  if (Status st = placeOfRange(static_cast<const char *>(dst), n,
                               "moecommCompiledDeviceCopy: dst", device);
      !st.ok())
    return record(st);
  if (Status st = placeOfRange(static_cast<const char *>(src), n,
                               "moecommCompiledDeviceCopy: src", device);
      !st.ok())
    return record(st);
  Status st = state.device->copy2D(dst, n, src, n, n, 1);
  if (st.ok())
    st = state.device->synchronize();
  return record(st);
}

void *moecomm_rt_stream(void) {
  return state.device ? state.device->stream() : nullptr;
}

moecommResult_t moecommCompiledDeviceSynchronize(void) {
  if (!state.device)
    return record(noDevice("moecommCompiledDeviceSynchronize"));
  if (Status st = state.device->synchronize(); !st.ok())
    return record(st);
  if (state.pending.empty())
    return moecommSuccess;
  return record(
      invalidArgument(cat(state.pending.size(),
                          " exchange(s) compiled code started were not "
                          "waited (moecomm_rt_wait), the first: ",
                          state.pending.front().what)));
}

// Copies and zero fills of <T> elements (BYTES each).
#define MOECOMM_BUFFER_OPS(T, BYTES)                                           \
  void _mlir_ciface_moecomm_rt_copy_##T(moecommUnrankedMemRef *src,            \
                                        moecommUnrankedMemRef *dst) {          \
    copyMemRef(src, dst, BYTES);                                               \
  }                                                                            \
  void _mlir_ciface_moecomm_rt_fill_zero_##T(moecommUnrankedMemRef *dst) {     \
    fillZero(dst, BYTES);                                                      \
  }
MOECOMM_BUFFER_OPS(bf16, 2)
MOECOMM_BUFFER_OPS(f32, 4)
MOECOMM_BUFFER_OPS(i32, 4)
MOECOMM_BUFFER_OPS(i64, 8)
MOECOMM_BUFFER_OPS(i8, 1)
MOECOMM_BUFFER_OPS(f8e4m3fn, 1)
MOECOMM_BUFFER_OPS(f8e8m0fnu, 1)
#undef MOECOMM_BUFFER_OPS

} // extern "C"
