//===- Pack.cu - Gather rows into a send buffer, optionally quantized -----===//
//
// The device form of gatherRows' pack cases (RowKernels.cpp, Fp8.cpp):
//  - copyRowsKernel: same type, row bytes copied (FP8 rows with their
//    scales), 16-, 4- or 1-byte words as alignment allows;
//  - quantizeRowsKernel: f32/bf16 rows -> FP8 e4m3fn + one f32 scale per
//    128-element block. A half-warp owns a block: each of its 16 lanes holds
//    8 elements (one 16-byte load of bf16), the block's amax is a 4-step
//    shuffle reduction, then each lane writes its 8 codes (8 bytes).
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

template <typename V>
__global__ void
copyRowsKernel(const uint8_t *__restrict__ in,
               const float *__restrict__ inScales,
               const int64_t *__restrict__ index, uint8_t *__restrict__ out,
               float *__restrict__ outScales, int64_t outRows, int64_t rowBytes,
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
          outScales[row * blocks + b] = 1.0f;
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
    const int64_t src = index ? index[row] : row;
    uint8_t *o = out + row * H;
    float *os = scales + row * nb;
    if (src < 0) {
      if (skipEmpty)
        continue;
      for (int64_t h = threadIdx.x; h < H; h += blockDim.x)
        o[h] = 0;
      for (int64_t b = threadIdx.x; b < nb; b += blockDim.x)
        os[b] = 1.0f;
      continue;
    }
    const T *x = in + src * H;
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

template <typename V>
void launchCopy(const moecommRows_t &in, const moecommRows_t &out,
                const GatherIndex &g, int64_t rowBytes, int64_t blocks,
                cudaStream_t stream) {
  copyRowsKernel<V><<<rowGrid(out.rows), kRowThreads, 0, stream>>>(
      static_cast<const uint8_t *>(in.data),
      static_cast<const float *>(in.scales), g.index,
      static_cast<uint8_t *>(out.data), static_cast<float *>(out.scales),
      out.rows, rowBytes, blocks,
      g.skipEmpty);
}

template <typename T>
void launchQuantize(const moecommRows_t &in, const moecommRows_t &out,
                    const GatherIndex &g, cudaStream_t stream) {
  const T *x = static_cast<const T *>(in.data);
  uint8_t *o = static_cast<uint8_t *>(out.data);
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
  const bool fp8 = out.type == moecommFloat8E4M3;
  const int64_t blocks = fp8 ? fp8Blocks(out.type, out.hidden) : 0;
  if (out.rows == 0 || rowBytes == 0)
    return Status::success();
  moecommRows_t o = out;
  if (!fp8)
    o.scales = nullptr; // no scales to copy
  if (rowBytes % 16 == 0 && isAligned(in.data, 16) && isAligned(out.data, 16))
    launchCopy<uint4>(in, o, gather, rowBytes, blocks, stream);
  else if (rowBytes % 4 == 0 && isAligned(in.data, 4) && isAligned(out.data, 4))
    launchCopy<uint32_t>(in, o, gather, rowBytes, blocks, stream);
  else
    launchCopy<uint8_t>(in, o, gather, rowBytes, blocks, stream);
  return launchStatus("copyRowsKernel");
}

Status launchQuantizeRows(const moecommRows_t &in, const moecommRows_t &out,
                          const GatherIndex &gather, cudaStream_t stream) {
  return launchHostTyped(out, in.type, "quantizeRowsKernel", [&](auto t) {
    launchQuantize<decltype(t)>(in, out, gather, stream);
  });
}

} // namespace cuda
} // namespace moecomm
