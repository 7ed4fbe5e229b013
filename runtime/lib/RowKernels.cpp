//===- RowKernels.cpp - CPU row gather / reduce / conversion --------------===//
#include "RowKernels.h"
#include "Fp8.h"
#include "moecomm/Model/Sizes.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#ifndef __has_feature
#define __has_feature(x) 0
#endif

namespace moecomm {

int64_t elementSize(moecommDataType_t type) {
  switch (type) {
  case moecommFloat32:
  case moecommInt32:
    return 4;
  case moecommBfloat16:
    return 2;
  case moecommFloat8E4M3:
  case moecommFloat8E4M3UE8M0:
  case moecommMxfp8:
    return 1;
  case moecommInt64:
    return 8;
  case moecommDataTypeMinEnum: // not a type
  case moecommDataTypeMaxEnum:
    break;
  }
  return 0;
}

Status checkRows(const moecommRows_t *rows, const char *what,
                 int64_t expectRows, int64_t hidden) {
  if (!rows)
    return invalidArgument(cat(what, " is NULL"));
  if (elementSize(rows->type) == 0)
    return invalidArgument(
        cat(what, " has an unknown data type ", (int)rows->type));
  // Before the expectations: callers may take them from `rows` itself.
  if (rows->rows < 0 || rows->hidden < 0)
    return invalidArgument(cat(what, " has ", rows->rows, " rows of hidden size ",
                               rows->hidden, "; both must be >= 0"));
  if (!blockFits(rows->rows, rows->hidden))
    return invalidArgument(cat(what, " has ", rows->rows, " rows of hidden size ",
                               rows->hidden, ": more bytes than memory holds"));
  if (rows->hidden != hidden)
    return invalidArgument(
        cat(what, " has hidden size ", rows->hidden, ", expected ", hidden));
  if (rows->rows != expectRows)
    return invalidArgument(
        cat(what, " has ", rows->rows, " rows, expected ", expectRows));
  if (rows->rows > 0 && rows->hidden > 0) {
    if (!rows->data)
      return invalidArgument(cat(what, " has NULL data"));
    if (isFp8(rows->type) && !rows->scales)
      return invalidArgument(cat(what, " is FP8 but has NULL scales"));
  }
  return Status::success();
}

RowSource RowSource::of(const moecommRows_t &rows) {
  RowSource s;
  s.type = rows.type;
  s.hidden = rows.hidden;
  s.rows = rows.rows;
  s.rowBytes = rows.hidden * elementSize(rows.type);
  s.base = static_cast<const uint8_t *>(rows.data);
  s.scales = static_cast<const uint8_t *>(rows.scales);
  return s;
}

bool isPlainGather(const RowMap &map, bool weighted) {
  if (weighted && !map.coefs.empty())
    return false;
  for (int64_t i = 0; i < map.rows(); ++i)
    if (map.offsets[i + 1] - map.offsets[i] != 1)
      return false;
  return true;
}

namespace {

/// Checks the shapes and the terms of the rows in `range`, and resolves an
/// open range (end < 0) to all rows.
Status checkMapShapes(const RowMap &map, const RowSource &in,
                      const moecommRows_t &out, RowRange &range) {
  if (out.rows != map.rows())
    return internalError(cat("row map makes ", map.rows(),
                             " rows but the output has ", out.rows));
  if (in.hidden != out.hidden)
    return internalError("row map input and output hidden sizes differ");
  if (range.end < 0)
    range.end = map.rows();
  if (range.begin < 0 || range.begin > range.end || range.end > map.rows())
    return internalError(cat("row range [", range.begin, ", ", range.end,
                             ") outside a map of ", map.rows(), " rows"));
  for (int64_t j = map.offsets[range.begin]; j < map.offsets[range.end]; ++j)
    if (map.src[j] < 0 || map.src[j] >= in.rows)
      return internalError(cat("row map reads row ", map.src[j], " of ",
                               in.rows));
  return Status::success();
}

} // namespace

Status gatherRows(const RowMap &map, const RowSource &in, moecommRows_t &out,
                  RowRange range) {
  if (Status st = checkMapShapes(map, in, out, range); !st.ok())
    return st;
  const int64_t H = out.hidden;
  const moecommDataType_t ti = in.type, to = out.type;
  const int64_t sb = fp8ScaleRowBytes(to, H);
  const bool sameType = ti == to;
  if (!sameType && !(isFloatData(ti) && isFp8(to)) &&
      !(isFp8(ti) && isFloatData(to)))
    return invalidArgument(
        cat("cannot convert rows of type ", (int)ti, " to type ", (int)to));
  const int64_t esi = elementSize(ti), eso = elementSize(to);
  uint8_t *ob = static_cast<uint8_t *>(out.data);
  for (int64_t i = range.begin; i < range.end; ++i) {
    int64_t b = map.offsets[i], e = map.offsets[i + 1];
    if (e - b > 1)
      return internalError("gather map has a row with several terms");
    uint8_t *o = ob + i * H * eso;
    void *os = isFp8(to) ? static_cast<uint8_t *>(out.scales) + i * sb
                         : nullptr;
    if (e == b) {
      std::memset(o, 0, H * eso);
      if (isFp8(to))
        fp8FillUnitScales(to, H, os);
      continue;
    }
    int64_t s = map.src[b];
    const uint8_t *x = in.row(s);
    if (sameType) {
      std::memcpy(o, x, H * esi);
      if (isFp8(to))
        std::memcpy(os, in.rowScales(s), sb);
    } else if (isFp8(to)) {
      if (ti == moecommFloat32)
        fp8QuantizeRow(to, reinterpret_cast<const float *>(x), H, o, os);
      else
        fp8QuantizeRowBf16(to, reinterpret_cast<const uint16_t *>(x), H, o,
                           os);
    } else {
      if (to == moecommFloat32)
        fp8DequantizeRow(ti, x, in.rowScales(s), H,
                         reinterpret_cast<float *>(o));
      else
        fp8DequantizeRowBf16(ti, x, in.rowScales(s), H,
                             reinterpret_cast<uint16_t *>(o));
    }
  }
  return Status::success();
}

namespace {

// The inner loops of reduceRows, compiled twice on x86-64 (AVX2 and
// baseline) and picked at load time. Element-wise IEEE f32 operations in
// the same order either way (no FMA: -ffp-contract=off), so the results are
// bit-identical on every machine.
#if defined(__x86_64__) && defined(__clang__) && defined(__ELF__) &&           \
    !defined(__SANITIZE_ADDRESS__) && !__has_feature(address_sanitizer)
#define MOECOMM_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define MOECOMM_KERNEL
#endif

// acc = acc + x (first: acc = 0 + x).
MOECOMM_KERNEL void accF32(float *acc, const float *x, int64_t n, bool first) {
  if (first)
    for (int64_t h = 0; h < n; ++h)
      acc[h] = 0.0f + x[h];
  else
    for (int64_t h = 0; h < n; ++h)
      acc[h] = acc[h] + x[h];
}
MOECOMM_KERNEL void accF32c(float *acc, const float *x, float c, int64_t n,
                            bool first) {
  if (first)
    for (int64_t h = 0; h < n; ++h)
      acc[h] = 0.0f + c * x[h];
  else
    for (int64_t h = 0; h < n; ++h)
      acc[h] = acc[h] + c * x[h];
}
MOECOMM_KERNEL void accBf16(float *acc, const uint16_t *x, int64_t n,
                            bool first) {
  if (first)
    for (int64_t h = 0; h < n; ++h)
      acc[h] = 0.0f + bf16ToF32(x[h]);
  else
    for (int64_t h = 0; h < n; ++h)
      acc[h] = acc[h] + bf16ToF32(x[h]);
}
MOECOMM_KERNEL void accBf16c(float *acc, const uint16_t *x, float c, int64_t n,
                             bool first) {
  if (first)
    for (int64_t h = 0; h < n; ++h)
      acc[h] = 0.0f + c * bf16ToF32(x[h]);
  else
    for (int64_t h = 0; h < n; ++h)
      acc[h] = acc[h] + c * bf16ToF32(x[h]);
}
MOECOMM_KERNEL void storeBf16(uint16_t *out, const float *acc, int64_t n) {
  for (int64_t h = 0; h < n; ++h)
    out[h] = f32ToBf16(acc[h]);
}

} // namespace

Status reduceRows(const RowMap &map, const RowSource &in, bool weighted,
                  moecommRows_t &out, RowRange range) {
  if (Status st = checkMapShapes(map, in, out, range); !st.ok())
    return st;
  if (!isFloatData(in.type) || !isFloatData(out.type))
    return invalidArgument("reductions need f32 or bf16 rows");
  const int64_t H = out.hidden;
  const bool useCoefs = weighted && !map.coefs.empty();
  // Accumulate in chunks that stay in L1.
  constexpr int64_t kChunk = 2048;
  float acc[kChunk];
  for (int64_t i = range.begin; i < range.end; ++i) {
    const int64_t b = map.offsets[i], e = map.offsets[i + 1];
    for (int64_t h0 = 0; h0 < H; h0 += kChunk) {
      const int64_t n = std::min(kChunk, H - h0);
      if (b == e)
        std::fill(acc, acc + n, 0.0f);
      for (int64_t j = b; j < e; ++j) {
        const uint8_t *row = in.row(map.src[j]);
        const bool first = j == b;
        if (in.type == moecommFloat32) {
          const float *x = reinterpret_cast<const float *>(row) + h0;
          if (useCoefs)
            accF32c(acc, x, map.coefs[j], n, first);
          else
            accF32(acc, x, n, first);
        } else {
          const uint16_t *x = reinterpret_cast<const uint16_t *>(row) + h0;
          if (useCoefs)
            accBf16c(acc, x, map.coefs[j], n, first);
          else
            accBf16(acc, x, n, first);
        }
      }
      if (out.type == moecommFloat32)
        std::memcpy(static_cast<float *>(out.data) + i * H + h0, acc, n * 4);
      else
        storeBf16(static_cast<uint16_t *>(out.data) + i * H + h0, acc, n);
    }
  }
  return Status::success();
}

} // namespace moecomm
