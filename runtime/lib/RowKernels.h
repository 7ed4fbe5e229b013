//===- RowKernels.h - CPU row gather / reduce / conversion ------*- C++ -*-===//
#ifndef MOECOMM_LIB_ROWKERNELS_H
#define MOECOMM_LIB_ROWKERNELS_H

#include "Status.h"
#include "moecomm/Model/WireFormat.h"
#include "moecomm/Runtime/Plan.h"

#include <cstdint>
#include <cstring>

namespace moecomm {

/// bf16 (raw bits) -> f32, exact.
inline float bf16ToF32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// f32 -> bf16 (raw bits), round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t f32ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/// Bytes of one element of `type` (FP8 types: 1, scales not included); 0 if the
/// type is unknown.
int64_t elementSize(moecommDataType_t type);

/// True for moecommFloat32 and moecommBfloat16.
inline bool isFloatData(moecommDataType_t t) {
  return t == moecommFloat32 || t == moecommBfloat16;
}

/// Checks that `rows` is a well-formed block of `expectRows` rows of
/// `hidden` elements (null data only when empty; FP8 needs scales; the
/// block within Sizes.h's blockFits, so its byte counts fit in int64).
/// `what` names the argument in the message.
Status checkRows(const moecommRows_t *rows, const char *what,
                 int64_t expectRows, int64_t hidden);

/// The input rows of a kernel: a contiguous block, or one pointer per row
/// (rows read in place from other ranks' buffers on the threads backend).
struct RowSource {
  moecommDataType_t type = moecommFloat32;
  int64_t hidden = 0;
  int64_t rows = 0;
  int64_t rowBytes = 0;          ///< hidden * element size
  const uint8_t *base = nullptr; ///< contiguous form
  const uint8_t *scales = nullptr; ///< contiguous form (FP8), as bytes
  const uint8_t *const *rowPtrs = nullptr;   ///< pointer form, [rows]
  const uint8_t *const *scalePtrs = nullptr; ///< pointer form (FP8), [rows]

  const uint8_t *row(int64_t i) const {
    return rowPtrs ? rowPtrs[i] : base + i * rowBytes;
  }
  /// Row i's fp8ScaleRowBytes(type, hidden) bytes of scales.
  const uint8_t *rowScales(int64_t i) const {
    return scalePtrs ? scalePtrs[i]
                     : scales + i * fp8ScaleRowBytes(type, hidden);
  }
  static RowSource of(const moecommRows_t &rows);
};

/// The output rows [begin, end) of a row map that a kernel computes (a
/// pipelined operation applies a map piece by piece); end < 0: all rows.
struct RowRange {
  int64_t begin = 0, end = -1;
};

/// Applies a one-term-per-row map (a gather): out[i] = in[src[off[i]]],
/// converted: same type (bytes copied, FP8 with its scales), f32/bf16 ->
/// FP8 (per-row quantize), FP8 -> f32/bf16 (dequantize). An empty segment
/// gives a zero row (FP8: zero codes, scale 1). Shapes must match the map;
/// only the output rows in `range` are written.
Status gatherRows(const RowMap &map, const RowSource &in, moecommRows_t &out,
                  RowRange range = {});
inline Status gatherRows(const RowMap &map, const moecommRows_t &in,
                         moecommRows_t &out) {
  return gatherRows(map, RowSource::of(in), out);
}

/// Applies a map as a sum: out[i] = sum_j c_j * in[src[j]] accumulated in
/// f32 from +0 in j order (acc = acc + c * v), c_j = coefs[j] if `weighted`
/// and the map has coefficients, else 1 (then acc = acc + v). in and out are
/// f32 or bf16 (any combination); the result is rounded to out's type. Only
/// the output rows in `range` are written.
Status reduceRows(const RowMap &map, const RowSource &in, bool weighted,
                  moecommRows_t &out, RowRange range = {});
inline Status reduceRows(const RowMap &map, const moecommRows_t &in,
                         bool weighted, moecommRows_t &out) {
  return reduceRows(map, RowSource::of(in), weighted, out);
}

/// Whether a map of `in` rows into `out` rows in `direction` gathers (a
/// copy, with the wire conversion) rather than reduces: dispatch maps always
/// gather; a combine map only when it is a plain gather (`plainGather`:
/// isPlainGather with the weights in use) between rows of one type, since
/// a one-term reduce would turn -0 into +0. The rule of every host and
/// device executor, so that they produce the same bits.
inline bool mapGathers(moecommDirection_t direction, moecommDataType_t in,
                       moecommDataType_t out, bool plainGather) {
  return direction == moecommDirectionDispatch || (in == out && plainGather);
}

/// True if `map` has exactly one term per row and no coefficient in use
/// (`weighted` false or no coefficients): a plain gather.
bool isPlainGather(const RowMap &map, bool weighted);

} // namespace moecomm

#endif // MOECOMM_LIB_ROWKERNELS_H
