//===- Reduce.cu - CSR row sums in f32 (combine) --------------------------===//
//
// The device form of reduceRows (RowKernels.cpp): out[i] = sum over the
// terms j of segment i, in j order, of c_j * in[src[j]] (or in[src[j]] when
// there are no coefficients), accumulated in f32 from +0 with IEEE adds and
// products (__fadd_rn / __fmul_rn: never contracted into an FMA), then
// rounded to out's type. Bit-identical to the CPU for every input. A
// negative src entry is skipped (the capacity mode's dropped slots).
//
//===----------------------------------------------------------------------===//
#include "DeviceRows.h"
#include "KernelUtil.cuh"
#include "RowKernels.h"

#include <cuda_bf16.h>

namespace moecomm {
namespace cuda {

namespace {

template <typename Tin, typename Tout, bool Vec, bool Coefs>
__global__ void reduceRowsKernel(const Tin *__restrict__ in,
                                 const int64_t *__restrict__ offsets,
                                 const int64_t *__restrict__ src,
                                 const float *__restrict__ coefs,
                                 Tout *__restrict__ out, int64_t rows,
                                 int64_t H) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t b = offsets[row], e = offsets[row + 1];
    Tout *o = out + row * H;
    if (Vec) {
      for (int64_t g = threadIdx.x; g < H / 8; g += blockDim.x) {
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t j = b; j < e; ++j) {
          const int64_t s = src[j];
          if (s < 0)
            continue;
          float v[8];
          load8(in + s * H + g * 8, v);
          if (Coefs) {
            const float c = coefs[j];
#pragma unroll
            for (int i = 0; i < 8; ++i)
              acc[i] = __fadd_rn(acc[i], __fmul_rn(c, v[i]));
          } else {
#pragma unroll
            for (int i = 0; i < 8; ++i)
              acc[i] = __fadd_rn(acc[i], v[i]);
          }
        }
        store8(o + g * 8, acc);
      }
    } else {
      for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
        float acc = 0.0f;
        for (int64_t j = b; j < e; ++j) {
          const int64_t s = src[j];
          if (s < 0)
            continue;
          const float v = toFloat(in[s * H + h]);
          acc = __fadd_rn(acc, Coefs ? __fmul_rn(coefs[j], v) : v);
        }
        storeFloat(o + h, acc);
      }
    }
  }
}

template <typename Tin, typename Tout>
void launchReduce(const moecommRows_t &in, const moecommRows_t &out,
                  const DeviceCsr &m, cudaStream_t stream) {
  const int64_t H = out.hidden;
  const Tin *x = static_cast<const Tin *>(in.data);
  Tout *o = static_cast<Tout *>(out.data);
  const int grid = rowGrid(out.rows);
  launchVectorOrScalar(in, 16, out, 16, [&](auto vec) {
    constexpr bool Vec = decltype(vec)::value;
    if (m.coefs)
      reduceRowsKernel<Tin, Tout, Vec, true><<<grid, kRowThreads, 0, stream>>>(
          x, m.offsets, m.src, m.coefs, o, out.rows, H);
    else
      reduceRowsKernel<Tin, Tout, Vec, false><<<grid, kRowThreads, 0, stream>>>(
          x, m.offsets, m.src, nullptr, o, out.rows, H);
  });
}

} // namespace

Status reduceRowsDevice(const moecommRows_t &in, const moecommRows_t &out,
                        const DeviceCsr &map, cudaStream_t stream) {
  if (!isFloatData(in.type) || !isFloatData(out.type))
    return invalidArgument("reductions need f32 or bf16 rows");
  if (in.hidden != out.hidden)
    return internalError("reduction input and output hidden sizes differ");
  if (out.rows == 0 || out.hidden == 0)
    return Status::success();
  if (!map.offsets) // src may be null: a map without terms
    return internalError("the reduction map is not on the device");
  const bool f32in = in.type == moecommFloat32,
             f32out = out.type == moecommFloat32;
  if (f32in && f32out)
    launchReduce<float, float>(in, out, map, stream);
  else if (f32in)
    launchReduce<float, __nv_bfloat16>(in, out, map, stream);
  else if (f32out)
    launchReduce<__nv_bfloat16, float>(in, out, map, stream);
  else
    launchReduce<__nv_bfloat16, __nv_bfloat16>(in, out, map, stream);
  return launchStatus("reduceRowsKernel");
}

} // namespace cuda
} // namespace moecomm
