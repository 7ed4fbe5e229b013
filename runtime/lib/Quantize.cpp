//===- Quantize.cpp - FP8 conversion of whole row blocks ------------------===//
#include "Quantize.h"

#include "Fp8.h"
#include "RowKernels.h"

namespace moecomm {

namespace {

/// Checks a conversion between `wide` (f32 or bf16) and `narrow` (FP8)
/// blocks of in's shape; `what` is the message for wrong types.
Status checkConversion(const moecommRows_t *in, const moecommRows_t *out,
                       const moecommRows_t *wide, const moecommRows_t *narrow,
                       const char *what) {
  if (!in || !out)
    return invalidArgument("in and out must not be NULL");
  if (Status st = checkRows(in, "in", in->rows, in->hidden); !st.ok())
    return st;
  if (Status st = checkRows(out, "out", in->rows, in->hidden); !st.ok())
    return st;
  if (!isFloatData(wide->type) || !isFp8(narrow->type))
    return invalidArgument(what);
  return Status::success();
}

} // namespace

Status quantizeRows(const moecommRows_t *in, const moecommRows_t *out) {
  if (Status st = checkConversion(in, out, in, out,
                                  "quantize needs f32 or bf16 in and FP8 out");
      !st.ok())
    return st;
  const moecommDataType_t type = out->type;
  const int64_t H = in->hidden, sb = fp8ScaleRowBytes(type, H);
  for (int64_t r = 0; r < in->rows; ++r) {
    uint8_t *q = static_cast<uint8_t *>(out->data) + r * H;
    void *s = static_cast<uint8_t *>(out->scales) + r * sb;
    if (in->type == moecommFloat32)
      fp8QuantizeRow(type, static_cast<const float *>(in->data) + r * H, H, q,
                     s);
    else
      fp8QuantizeRowBf16(type, static_cast<const uint16_t *>(in->data) + r * H,
                         H, q, s);
  }
  return Status::success();
}

Status dequantizeRows(const moecommRows_t *in, const moecommRows_t *out) {
  if (Status st = checkConversion(
          in, out, out, in, "dequantize needs FP8 in and f32 or bf16 out");
      !st.ok())
    return st;
  const moecommDataType_t type = in->type;
  const int64_t H = in->hidden, sb = fp8ScaleRowBytes(type, H);
  for (int64_t r = 0; r < in->rows; ++r) {
    const uint8_t *q = static_cast<const uint8_t *>(in->data) + r * H;
    const void *s = static_cast<const uint8_t *>(in->scales) + r * sb;
    if (out->type == moecommFloat32)
      fp8DequantizeRow(type, q, s, H, static_cast<float *>(out->data) + r * H);
    else
      fp8DequantizeRowBf16(type, q, s, H,
                           static_cast<uint16_t *>(out->data) + r * H);
  }
  return Status::success();
}

} // namespace moecomm
