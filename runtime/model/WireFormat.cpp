//===- WireFormat.cpp - Bytes of a row on the wire -------------------------===//
#include "moecomm/Model/WireFormat.h"

#include "moecomm/Model/Sizes.h"

namespace moecomm {

int64_t wireRowBytes(moecommDataType_t type, int64_t hidden) {
  switch (type) {
  case moecommFloat32:
  case moecommInt32:
    return saturatingMul(4, hidden);
  case moecommBfloat16:
    return saturatingMul(2, hidden);
  case moecommFloat8E4M3:
  case moecommFloat8E4M3UE8M0:
  case moecommMxfp8:
    return saturatingAdd(hidden, fp8ScaleRowBytes(type, hidden));
  case moecommInt64:
    return saturatingMul(8, hidden);
  case moecommDataTypeMinEnum: // not a type
  case moecommDataTypeMaxEnum:
    break;
  }
  return 0;
}

} // namespace moecomm
