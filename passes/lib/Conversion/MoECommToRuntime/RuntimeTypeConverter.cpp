//===- RuntimeTypeConverter.cpp - handles and requests -> !llvm.ptr --------===//
//
// Handles and requests cross function boundaries as the runtime's opaque
// pointers. MLIR's type-conversion patterns retype signatures, calls and
// returns; values are bridged by unrealized_conversion_cast, which folds away
// against the casts the bufferization models emit around each runtime call.
//
//===----------------------------------------------------------------------===//

#include "moecomm/Conversion/MoECommToRuntime.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "moecomm/Conversion/BufferizableOpInterfaceImpl.h"

#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"

using namespace mlir;
using namespace mlir::moecomm;

RuntimeTypeConverter::RuntimeTypeConverter(MLIRContext *context) {
  addConversion([](Type type) { return type; });
  Type ptr = LLVM::LLVMPointerType::get(context);
  addConversion([ptr](HandleType) { return ptr; });
  addConversion([ptr](RequestType) { return ptr; });
}

void mlir::moecomm::populateMoECommToRuntimeConversionPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                 converter);
  populateCallOpTypeConversionPattern(patterns, converter);
  populateReturnOpTypeConversionPattern(patterns, converter);
}

void mlir::moecomm::populateMoECommToRuntimeLegality(
    const TypeConverter &converter, ConversionTarget &target) {
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  target.addDynamicallyLegalOp<func::FuncOp>([&converter](func::FuncOp func) {
    return converter.isSignatureLegal(func.getFunctionType()) &&
           converter.isLegal(&func.getBody());
  });
  target.addDynamicallyLegalOp<func::CallOp>(
      [&converter](func::CallOp call) { return converter.isLegal(call); });
  target.addDynamicallyLegalOp<func::ReturnOp>([&converter](Operation *op) {
    return isLegalForReturnOpTypeConversionPattern(op, converter);
  });
}

void mlir::moecomm::registerConvertMoECommToRuntimeInterfaces(
    DialectRegistry &registry) {
  mlir::moecomm::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
}
