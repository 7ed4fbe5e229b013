//===- RuntimeChecks.h - runtime checks of lowered IR -----------*- C++ -*-===//
//
// Lowered code whose inputs can only be checked when it runs (offsets and
// sizes of JAX's ragged all-to-all, expert ids and counts of the
// framework-level row moves) records a failed check with the runtime's
// `moecomm_rt_check` (moecomm_compiled.h): an invalid-argument error of the
// rank, "<op> at FILE:LINE:COL: rank R: <the check> (<its values>)", which
// the host reads with moecommCompiledStatus / moecommCompiledLastError and
// the rank's next collective call shares with its peers. The code then
// skips what the check guards. The texts are private constant globals of
// the module, one per text.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_RUNTIMECHECKS_H
#define MOECOMM_TRANSFORMS_RUNTIMECHECKS_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::moecomm {

/// The texts of one module's checks: one global per text, named
/// `<prefix>_check` (SymbolTable renaming makes the names unique).
struct CheckTexts {
  explicit CheckTexts(Operation *module) : symbols(module) {}
  SymbolTable symbols;
  llvm::StringMap<LLVM::GlobalOp> globals;
};

/// Emits the checks of one op `op` at `b`'s insertion point.
class RuntimeChecks {
public:
  /// `name` starts each message ("<name> at FILE:LINE:COL") and the names
  /// of the texts' globals.
  RuntimeChecks(OpBuilder &b, Operation *op, StringRef name, CheckTexts &texts);

  /// Unless `ok` (i1), records the error "`what`", each "{}" in `what`
  /// replaced by the next of `values` (i64, at most 4).
  void check(Value ok, StringRef what, ArrayRef<Value> values);

private:
  /// The address of a NUL-terminated constant holding `s`.
  Value text(StringRef s);

  OpBuilder &b;
  Operation *op;
  std::string name;
  std::string where;
  CheckTexts &texts;
};

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_RUNTIMECHECKS_H
