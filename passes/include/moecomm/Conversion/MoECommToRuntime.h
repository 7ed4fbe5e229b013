//===- MoECommToRuntime.h - moecomm -> runtime calls ------------*- C++ -*-===//
//
// The pieces of convert-moecomm-to-runtime that other lowerings reuse: the
// type conversion of moecomm's runtime objects and its patterns, and the
// interface models its bufferization needs.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_CONVERSION_MOECOMMTORUNTIME_H
#define MOECOMM_CONVERSION_MOECOMMTORUNTIME_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::moecomm {

/// Converts the runtime objects `!moecomm.handle` (a layout) and
/// `!moecomm.request` (an exchange in flight) to `!llvm.ptr`, the opaque
/// pointers of the runtime's compiled-code ABI (moecomm_compiled.h); every
/// other type converts to itself.
class RuntimeTypeConverter : public TypeConverter {
public:
  explicit RuntimeTypeConverter(MLIRContext *context);
};

/// Adds the upstream patterns that retype `converter`'s types in func.func
/// signatures (definitions and declarations), func.call and func.return.
void populateMoECommToRuntimeConversionPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns);

/// Makes func.func, func.call and func.return legal once `converter` leaves
/// their types unchanged, and every other op legal: a handle or request any
/// other op uses stays behind an unrealized_conversion_cast.
void populateMoECommToRuntimeLegality(const TypeConverter &converter,
                                      ConversionTarget &target);

/// Registers the BufferizableOpInterface models that
/// convert-moecomm-to-runtime bufferizes with: moecomm's (which emit the
/// runtime calls) and those of the upstream dialects graphs hold (arith,
/// func, linalg, scf, tensor).
void registerConvertMoECommToRuntimeInterfaces(DialectRegistry &registry);

} // namespace mlir::moecomm

#endif // MOECOMM_CONVERSION_MOECOMMTORUNTIME_H
