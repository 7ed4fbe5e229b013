//===- RuntimeAbi.h - emitting calls of the runtime's compiled-code ABI ---===//
//
// The runtime functions compiled code calls (runtime/include/moecomm/
// moecomm_compiled.h): `moecomm_rt_*`, declared on first use with
// `llvm.emit_c_interface` when they take memrefs. Memref arguments use the
// fully dynamic strided layout so one declaration serves every caller; names
// carry the element types (`_bf16`, `_f32`, `_i32`, `_i64`) and the FP8
// formats (`_f8`: fp8_e4m3, `_ue8m0`: fp8_e4m3_ue8m0, `_mxfp8`).
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_PASSES_RUNTIMEABI_H
#define MOECOMM_PASSES_RUNTIMEABI_H

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

namespace mlir::moecomm {

/// The step value the ABI uses for the output order (after the last stage).
constexpr int64_t kOutputStep = -1;

class RuntimeAbi {
public:
  /// Emits at `builder`'s insertion point; declarations go into the module
  /// enclosing `anchor`.
  RuntimeAbi(OpBuilder &builder, Location loc, Operation *anchor);

  /// ABI name suffix of a non-FP8 element type: bf16, f32, i32 or i64.
  static StringRef suffix(Type elementType);
  /// ABI name suffix of an element type of the buffer calls (copy, fill):
  /// those of suffix(Type), i8, f8e4m3fn or f8e8m0fnu; empty for others.
  static StringRef bufferSuffix(Type elementType);
  /// ABI name suffix of FP8 rows (with their scales) of format `wire`: f8,
  /// ue8m0 or mxfp8.
  static StringRef suffix(WireDtype wire);

  /// Calls `name` (declaring it on first use) and returns its results.
  ValueRange call(StringRef name, ValueRange args, TypeRange results = {});

  /// The runtime pointer behind a handle or request value.
  Value pointer(Value handleOrRequest);
  /// Wraps a runtime pointer as a value of `type` (handle or request).
  Value wrap(Value pointer, Type type);

  Value i32(int64_t value);
  Value i64(int64_t value);
  /// A null pointer.
  Value nullPointer();
  /// The address of a private constant global i64 array holding `values`
  /// (`llvm.mlir.global`, e.g. an expert placement). Calls with the same
  /// values share one global, named `<prefix>_<hash of the values>` and kept
  /// sorted at the top of the module, so the same graph compiles to the same
  /// module whatever order its functions are visited in.
  Value constantArray(StringRef prefix, ArrayRef<int64_t> values);

  /// Rows of step `step` (kOutputStep: the output) of `direction`; `recv`
  /// selects a stage's receive side. An `index` value.
  Value rows(Value layout, Direction direction, int64_t step, bool recv);

  /// A new identity-layout buffer for `type` whose dynamic leading dimension
  /// is `rows` (index).
  FailureOr<Value> alloc(const bufferization::BufferizationOptions &options,
                         RankedTensorType type, Value rows);

  /// `buffer` cast to the fully dynamic strided layout of the ABI.
  Value abiMemRef(Value buffer);

private:
  OpBuilder &b;
  Location loc;
  Operation *module;
};

/// Every call of a `moecomm_rt_*` function must match the declaration the
/// module holds: the names belong to the runtime's compiled-code ABI
/// (moecomm_compiled.h), and a module that declares one with other types
/// (or as something other than a function) cannot call the runtime. Reports
/// the first mismatch as an error on the call (RuntimeAbi::call builds the
/// ABI's call whatever the module declares, for this check to find).
LogicalResult checkRuntimeDeclarations(ModuleOp module);

} // namespace mlir::moecomm

#endif // MOECOMM_PASSES_RUNTIMEABI_H
