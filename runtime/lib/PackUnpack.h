//===- PackUnpack.h - The local staged primitives ---------------*- C++ -*-===//
//
// moecommPack and moecommUnpack: the local steps around a layout's exchanges
// that compiled code calls between them (the staged level). No
// communication; device rows are handed to the backend's DeviceEngine.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_PACKUNPACK_H
#define MOECOMM_LIB_PACKUNPACK_H

#include "Status.h"

struct moecommLayout;

namespace moecomm {

class Comm;

/// Packs `in` (the input of stage `stage` of `direction`: [stageInputRows]
/// x [H]) into `out` (the stage's [sendRows][H] send rows). Dispatch
/// gathers, converting to FP8 when out is FP8; combine gathers or reduces
/// f32/bf16 rows (`weighted`: times the routing weights). InvalidArgument
/// (prefixed with the rank) for a bad layout, direction, stage, shape or
/// type. `stream` is the caller's stream on a device backend.
Status packRows(Comm &comm, const moecommLayout *layout,
                moecommDirection_t direction, int stage,
                const moecommRows_t *in, int weighted, const moecommRows_t *out,
                moecommStream_t stream);

/// Unpacks the last stage's received rows `in` (or the direction's input
/// when there is no stage) into the output order: dispatch [R][H], combine
/// [T][H] (summing a token's rows, `weighted` as above). Errors as above.
Status unpackRows(Comm &comm, const moecommLayout *layout,
                  moecommDirection_t direction, const moecommRows_t *in,
                  int weighted, const moecommRows_t *out,
                  moecommStream_t stream);

} // namespace moecomm

#endif // MOECOMM_LIB_PACKUNPACK_H
