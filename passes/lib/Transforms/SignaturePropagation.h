//===- SignaturePropagation.h - retype values across functions --*- C++ -*-===//
//
// moecomm-configure-collectives (a retarget re-infers result types that
// depend on the ranks) and moecomm-select-strategy (a handle type records its
// strategy) change the types of values that flow through func.call and
// func.return into other functions: a combine in the backward function must
// see the handle type its dispatch was planned with. These helpers carry a
// new type along those edges, changing the function signatures on the way,
// and check afterwards that every call and return still agrees with them.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_SIGNATUREPROPAGATION_H
#define MOECOMM_TRANSFORMS_SIGNATUREPROPAGATION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::moecomm {

/// How a changed type may flow through the module: `checkValue` is asked
/// about every value it reaches before the value's type changes, `checkUse`
/// about every use other than func.return and a func.call of a function
/// defined in the module. Each emits its error and fails to stop the
/// propagation.
struct TypeFlow {
  function_ref<LogicalResult(Value)> checkValue;
  function_ref<LogicalResult(OpOperand &)> checkUse;
};

/// Sets `value`'s type to `type` and propagates it (propagateUses).
LogicalResult propagateType(Value value, Type type,
                            SymbolTableCollection &symbols,
                            const TypeFlow &flow);

/// Follows `value`'s (new) type through func.return (into the function's
/// results and every call's results) and func.call (into the callee's
/// arguments). An external function's signature is not changed: such a call
/// goes to `flow.checkUse`.
LogicalResult propagateUses(Value value, SymbolTableCollection &symbols,
                            const TypeFlow &flow);

/// Checks that every call and return of `module` agrees with the signatures
/// the propagation changed (a value it does not reach, e.g. a function
/// argument no dispatch feeds, may still carry the old type) and that no
/// function whose type changed is taken by value (func.constant). Emits
/// "cannot retype ..." at the first mismatch.
LogicalResult checkSignatures(ModuleOp module, SymbolTableCollection &symbols);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_SIGNATUREPROPAGATION_H
