//===- Unpack.cu - Gather received FP8 rows, dequantized ------------------===//
//
// The device form of gatherRows' FP8 -> f32/bf16 case (the dispatch
// unpack into expert-major rows):
//   out[i][h] = decode(q[h]) * scale[h / block]
// in f32 (block and scale per FP8 type: 128 and f32 for fp8_e4m3, 128 or 32
// and the E8M0 byte's 2^(byte - 127) for fp8_e4m3_ue8m0 and mxfp8), rounded
// to nearest even for bf16 (Fp8.cpp's fp8DequantizeRow*).
// Each thread handles 8 codes (one 8-byte load) in the vector form.
// Same-type unpacks use Pack.cu's copy kernel.
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

/// The f32 value of one scale: fp8_e4m3's f32 itself, an E8M0 byte's
/// power of two.
__device__ __forceinline__ float scaleValue(float s) { return s; }
__device__ __forceinline__ float scaleValue(uint8_t s) {
  return decodeE8M0(s);
}

/// Scales of type S (float or E8M0 bytes), one per `block` elements; Vec
/// reads 8 elements at a time, all in one block (every block size is a
/// multiple of 8).
template <typename T, typename S, bool Vec>
__global__ void dequantizeRowsKernel(const uint8_t *__restrict__ in,
                                     const S *__restrict__ inScales,
                                     const int64_t *__restrict__ index,
                                     T *__restrict__ out, int64_t outRows,
                                     int64_t H, int64_t block, bool skipEmpty) {
  const int64_t nb = H / block + (H % block != 0);
  for (int64_t row = blockIdx.x; row < outRows; row += gridDim.x) {
    const int64_t src = index ? index[row] : row;
    T *o = out + row * H;
    if (src < 0) {
      if (skipEmpty)
        continue;
      if (Vec) {
        const float zero[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t g = threadIdx.x; g < H / 8; g += blockDim.x)
          store8(o + g * 8, zero);
      } else {
        for (int64_t h = threadIdx.x; h < H; h += blockDim.x)
          storeFloat(o + h, 0.0f);
      }
      continue;
    }
    const uint8_t *q = in + src * H;
    const S *s = inScales + src * nb;
    if (Vec) {
      for (int64_t g = threadIdx.x; g < H / 8; g += blockDim.x) {
        const uint2 raw = __ldg(reinterpret_cast<const uint2 *>(q + g * 8));
        const float scale = scaleValue(__ldg(s + g * 8 / block));
        const float2 a = decodeE4M3x2(raw.x), b = decodeE4M3x2(raw.x >> 16),
                     c = decodeE4M3x2(raw.y), d = decodeE4M3x2(raw.y >> 16);
        const float v[8] = {__fmul_rn(a.x, scale), __fmul_rn(a.y, scale),
                            __fmul_rn(b.x, scale), __fmul_rn(b.y, scale),
                            __fmul_rn(c.x, scale), __fmul_rn(c.y, scale),
                            __fmul_rn(d.x, scale), __fmul_rn(d.y, scale)};
        store8(o + g * 8, v);
      }
    } else {
      for (int64_t h = threadIdx.x; h < H; h += blockDim.x)
        storeFloat(o + h,
                   __fmul_rn(decodeE4M3(q[h]), scaleValue(__ldg(s + h / block))));
    }
  }
}

template <typename T, typename S>
void launchDequantize(const moecommRows_t &in, const moecommRows_t &out,
                      const GatherIndex &g, cudaStream_t stream) {
  static_assert(MOECOMM_FP8_BLOCK % 8 == 0 && MOECOMM_MXFP8_BLOCK % 8 == 0,
                "Vec reads 8 elements of one block");
  const uint8_t *q = static_cast<const uint8_t *>(in.data);
  T *o = static_cast<T *>(out.data);
  launchVectorOrScalar(in, 8, out, 16, [&](auto vec) {
    dequantizeRowsKernel<T, S, decltype(vec)::value>
        <<<rowGrid(out.rows), kRowThreads, 0, stream>>>(
            q, static_cast<const S *>(in.scales), g.index, o, out.rows,
            out.hidden, fp8BlockSize(in.type), g.skipEmpty);
  });
}

} // namespace

Status launchDequantizeRows(const moecommRows_t &in, const moecommRows_t &out,
                            const GatherIndex &gather, cudaStream_t stream) {
  return launchHostTyped(out, out.type, "dequantizeRowsKernel", [&](auto t) {
    if (hasE8M0Scales(in.type))
      launchDequantize<decltype(t), uint8_t>(in, out, gather, stream);
    else
      launchDequantize<decltype(t), float>(in, out, gather, stream);
  });
}

} // namespace cuda
} // namespace moecomm
