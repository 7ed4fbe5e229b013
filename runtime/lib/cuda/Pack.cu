//===- Pack.cu - Gather rows into a send buffer, optionally quantized -----===//
//
// The device form of gatherRows' pack cases (RowKernels.cpp, Fp8.cpp):
//  - copyRowsKernel: same type, row bytes copied (FP8 rows with their
//    scales, f32 or E8M0 bytes), 16-, 4- or 1-byte words as alignment
//    allows;
//  - quantizeRowsKernel: f32/bf16 rows -> fp8_e4m3: e4m3fn + one f32 scale
//    per 128-element block. A half-warp owns a block: each of its 16 lanes
//    holds 8 elements (one 16-byte load of bf16), the block's amax is a
//    4-step shuffle reduction, then each lane writes its 8 codes (8 bytes);
//  - quantizeRowsE8M0Kernel: f32/bf16 rows -> fp8_e4m3_ue8m0 (128-element
//    blocks) or mxfp8 (32): one thread per block, which finds the block's
//    amax, writes its E8M0 scale byte and encodes its elements. Simpler than
//    the half-warp layout (one kernel for both block sizes) at the price of
//    strided loads.
// Empty rows (negative index) are zero rows with scale 1, or skipped.
//
//===----------------------------------------------------------------------===//
#include "DeviceRows.h"
#include "Fp8Device.cuh"
#include "KernelUtil.cuh"
#include "moecomm/Model/WireFormat.h"

#include <cuda_bf16.h>

namespace moecomm {
namespace cuda {

namespace {

// quantizeRowsKernel's layout: a half-warp's 16 lanes hold 8 elements each of
// one scale block.
static_assert(MOECOMM_FP8_BLOCK == 16 * 8, "a half-warp holds one FP8 block");

/// The scale 1 of an empty row: f32 1.0 (fp8_e4m3) or the E8M0 byte 127.
template <typename S> __device__ __forceinline__ S unitScale();
template <> __device__ __forceinline__ float unitScale<float>() {
  return 1.0f;
}
template <> __device__ __forceinline__ uint8_t unitScale<uint8_t>() {
  return kE8M0One;
}

/// The input row (in `in`, `H` elements each) of output row `row` of a
/// quantizing gather: its index entry, or `row` itself without an index.
/// A negative entry is an empty row: nullptr, after writing `o` and `os`
/// as zero codes and `nb` unit scales (S as for unitScale) unless
/// `skipEmpty`, the block's threads sharing the work.
template <typename T, typename S>
__device__ __forceinline__ const T *
sourceRow(const T *in, const int64_t *index, int64_t row, uint8_t *o, S *os,
          int64_t H, int64_t nb, bool skipEmpty) {
  const int64_t src = index ? index[row] : row;
  if (src >= 0)
    return in + src * H;
  if (!skipEmpty) {
    for (int64_t h = threadIdx.x; h < H; h += blockDim.x)
      o[h] = 0;
    for (int64_t b = threadIdx.x; b < nb; b += blockDim.x)
      os[b] = unitScale<S>();
  }
  return nullptr;
}

/// Copies rows of `rowBytes` in words V with their `blocks` scales of type
/// S each (float for fp8_e4m3, uint8_t E8M0 bytes; none when outScales is
/// null).
template <typename V, typename S>
__global__ void
copyRowsKernel(const uint8_t *__restrict__ in,
               const S *__restrict__ inScales,
               const int64_t *__restrict__ index, uint8_t *__restrict__ out,
               S *__restrict__ outScales, int64_t outRows, int64_t rowBytes,
               int64_t blocks, bool skipEmpty) {
  const int64_t words = rowBytes / (int64_t)sizeof(V);
  for (int64_t row = blockIdx.x; row < outRows; row += gridDim.x) {
    const int64_t src = index ? index[row] : row;
    V *o = reinterpret_cast<V *>(out + row * rowBytes);
    if (src < 0) {
      if (skipEmpty)
        continue;
      for (int64_t w = threadIdx.x; w < words; w += blockDim.x)
        o[w] = V{};
      if (outScales)
        for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x)
          outScales[row * blocks + b] = unitScale<S>();
      continue;
    }
    const V *x = reinterpret_cast<const V *>(in + src * rowBytes);
    for (int64_t w = threadIdx.x; w < words; w += blockDim.x)
      o[w] = __ldg(x + w);
    if (outScales)
      for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x)
        outScales[row * blocks + b] = __ldg(inScales + src * blocks + b);
  }
}

template <typename T, bool Vec>
__global__ void
quantizeRowsKernel(const T *__restrict__ in, const int64_t *__restrict__ index,
                   uint8_t *__restrict__ out, float *__restrict__ scales,
                   int64_t outRows, int64_t H, bool skipEmpty) {
  const int64_t nb = (H + kE4M3Block - 1) / kE4M3Block;
  const int lane = threadIdx.x & 31;
  const int half = lane >> 4; // which 128-element block of the pair
  const int l16 = lane & 15;  // lane within the half-warp
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  for (int64_t row = blockIdx.x; row < outRows; row += gridDim.x) {
    uint8_t *o = out + row * H;
    float *os = scales + row * nb;
    const T *x = sourceRow(in, index, row, o, os, H, nb, skipEmpty);
    if (!x)
      continue;
    // Each warp takes two blocks at a time; the loop bound is uniform in the
    // warp, so every lane reaches the shuffles.
    for (int64_t base = 2 * (int64_t)warp; base < nb;
         base += 2 * (int64_t)warps) {
      const int64_t blk = base + half;
      const bool active = blk < nb;
      float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      float amax = 0.0f;
      // Vec: 8 consecutive elements.
      const int64_t h0 = blk * kE4M3Block + l16 * 8;
      if (Vec) {
        if (active && h0 < H) {
          load8(x + h0, v);
#pragma unroll
          for (int i = 0; i < 8; ++i)
            amax = fmaxf(amax, fabsf(v[i]));
        }
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          // Coalesced.
          const int64_t h = blk * kE4M3Block + l16 + 16 * i;
          if (active && h < H) {
            v[i] = toFloat(x[h]);
            amax = fmaxf(amax, fabsf(v[i]));
          }
        }
      }
      // fmaxf ignores NaN, as std::max(amax, NaN) does in Fp8.cpp.
#pragma unroll
      for (int off = 8; off > 0; off >>= 1)
        amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
      const float s = blockScale(amax);
      if (!active)
        continue;
      if (l16 == 0)
        os[blk] = s;
      if (Vec) {
        if (h0 < H) {
          uint2 q;
          q.x = encodeE4M3x4(v[0], v[1], v[2], v[3], s);
          q.y = encodeE4M3x4(v[4], v[5], v[6], v[7], s);
          *reinterpret_cast<uint2 *>(o + h0) = q;
        }
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int64_t h = blk * kE4M3Block + l16 + 16 * i;
          if (h < H)
            o[h] = encodeE4M3(v[i], s);
        }
      }
    }
  }
}

/// One block of an E8M0 format per thread (see the file comment); `block`
/// is fp8BlockSize(type).
template <typename T>
__global__ void quantizeRowsE8M0Kernel(
    const T *__restrict__ in, const int64_t *__restrict__ index,
    uint8_t *__restrict__ out, uint8_t *__restrict__ scales, int64_t outRows,
    int64_t H, moecommDataType_t type, int64_t block, bool skipEmpty) {
  const int64_t nb = H / block + (H % block != 0);
  for (int64_t row = blockIdx.x; row < outRows; row += gridDim.x) {
    uint8_t *o = out + row * H, *os = scales + row * nb;
    const T *x = sourceRow(in, index, row, o, os, H, nb, skipEmpty);
    if (!x)
      continue;
    for (int64_t b = threadIdx.x; b < nb; b += blockDim.x) {
      const int64_t h0 = b * block, h1 = min(H, h0 + block);
      float amax = 0.0f;
      // fmaxf ignores NaN, as std::max(amax, NaN) does in Fp8.cpp.
      for (int64_t h = h0; h < h1; ++h)
        amax = fmaxf(amax, fabsf(toFloat(x[h])));
      const uint8_t byte = e8m0ScaleByte(type, amax);
      os[b] = byte;
      const float s = decodeE8M0(byte);
      for (int64_t h = h0; h < h1; ++h)
        o[h] = encodeE4M3(toFloat(x[h]), s);
    }
  }
}

template <typename V, typename S>
void launchCopy(const moecommRows_t &in, const moecommRows_t &out,
                const GatherIndex &g, int64_t rowBytes, int64_t blocks,
                cudaStream_t stream) {
  copyRowsKernel<V, S><<<rowGrid(out.rows), kRowThreads, 0, stream>>>(
      static_cast<const uint8_t *>(in.data), static_cast<const S *>(in.scales),
      g.index, static_cast<uint8_t *>(out.data), static_cast<S *>(out.scales),
      out.rows, rowBytes, blocks, g.skipEmpty);
}

/// launchCopy with 16-, 4- or 1-byte words as the row bytes and alignment
/// allow.
template <typename S>
void launchCopyWords(const moecommRows_t &in, const moecommRows_t &out,
                     const GatherIndex &g, int64_t rowBytes, int64_t blocks,
                     cudaStream_t stream) {
  if (rowBytes % 16 == 0 && isAligned(in.data, 16) && isAligned(out.data, 16))
    launchCopy<uint4, S>(in, out, g, rowBytes, blocks, stream);
  else if (rowBytes % 4 == 0 && isAligned(in.data, 4) && isAligned(out.data, 4))
    launchCopy<uint32_t, S>(in, out, g, rowBytes, blocks, stream);
  else
    launchCopy<uint8_t, S>(in, out, g, rowBytes, blocks, stream);
}

template <typename T>
void launchQuantize(const moecommRows_t &in, const moecommRows_t &out,
                    const GatherIndex &g, cudaStream_t stream) {
  const T *x = static_cast<const T *>(in.data);
  uint8_t *o = static_cast<uint8_t *>(out.data);
  if (hasE8M0Scales(out.type)) {
    quantizeRowsE8M0Kernel<T><<<rowGrid(out.rows), kRowThreads, 0, stream>>>(
        x, g.index, o, static_cast<uint8_t *>(out.scales), out.rows,
        out.hidden, out.type, fp8BlockSize(out.type), g.skipEmpty);
    return;
  }
  launchVectorOrScalar(in, 16, out, 8, [&](auto vec) {
    quantizeRowsKernel<T, decltype(vec)::value>
        <<<rowGrid(out.rows), kRowThreads, 0, stream>>>(
            x, g.index, o, static_cast<float *>(out.scales), out.rows,
            out.hidden, g.skipEmpty);
  });
}

} // namespace

Status launchCopyRows(const moecommRows_t &in, const moecommRows_t &out,
                      const GatherIndex &gather, cudaStream_t stream) {
  const int64_t esize = in.type == moecommFloat32    ? 4
                        : in.type == moecommBfloat16 ? 2
                                                     : 1;
  const int64_t rowBytes = out.hidden * esize;
  const int64_t blocks = fp8Blocks(out.type, out.hidden); // 0: not FP8
  if (out.rows == 0 || rowBytes == 0)
    return Status::success();
  moecommRows_t o = out;
  if (!isFp8(out.type))
    o.scales = nullptr; // no scales to copy
  if (hasE8M0Scales(out.type))
    launchCopyWords<uint8_t>(in, o, gather, rowBytes, blocks, stream);
  else
    launchCopyWords<float>(in, o, gather, rowBytes, blocks, stream);
  return launchStatus("copyRowsKernel");
}

Status launchQuantizeRows(const moecommRows_t &in, const moecommRows_t &out,
                          const GatherIndex &gather, cudaStream_t stream) {
  return launchHostTyped(out, in.type,
                         hasE8M0Scales(out.type) ? "quantizeRowsE8M0Kernel"
                                                 : "quantizeRowsKernel",
                         [&](auto t) {
    launchQuantize<decltype(t)>(in, out, gather, stream);
  });
}

} // namespace cuda
} // namespace moecomm
