//===- SignaturePropagation.cpp - retype values across functions ----------===//

#include "Transforms/SignaturePropagation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

LogicalResult mlir::moecomm::propagateUses(Value value,
                                           SymbolTableCollection &symbols,
                                           const TypeFlow &flow) {
  Type type = value.getType();
  for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
    Operation *user = use.getOwner();
    unsigned index = use.getOperandNumber();
    if (auto ret = dyn_cast<func::ReturnOp>(user)) {
      auto func = ret->getParentOfType<func::FuncOp>();
      SmallVector<Type> results(func.getResultTypes());
      results[index] = type;
      func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                     results));
      ModuleOp module = func->getParentOfType<ModuleOp>();
      if (auto uses = SymbolTable::getSymbolUses(func, module))
        for (SymbolTable::SymbolUse symbolUse : *uses)
          if (auto call = dyn_cast<func::CallOp>(symbolUse.getUser()))
            if (failed(
                    propagateType(call.getResult(index), type, symbols, flow)))
              return failure();
      continue;
    }
    auto call = dyn_cast<func::CallOp>(user);
    auto callee = call ? symbols.lookupNearestSymbolFrom<func::FuncOp>(
                             call, call.getCalleeAttr())
                       : func::FuncOp();
    // An external function's signature is not this module's to change.
    if (!callee || callee.isExternal()) {
      if (failed(flow.checkUse(use)))
        return failure();
      continue;
    }
    if (failed(propagateType(callee.getArgument(index), type, symbols, flow)))
      return failure();
    SmallVector<Type> inputs(callee.getArgumentTypes());
    inputs[index] = type;
    callee.setType(FunctionType::get(callee.getContext(), inputs,
                                     callee.getResultTypes()));
  }
  return success();
}

LogicalResult mlir::moecomm::propagateType(Value value, Type type,
                                           SymbolTableCollection &symbols,
                                           const TypeFlow &flow) {
  if (value.getType() == type)
    return success();
  if (failed(flow.checkValue(value)))
    return failure();
  value.setType(type);
  return propagateUses(value, symbols, flow);
}

LogicalResult mlir::moecomm::checkSignatures(ModuleOp module,
                                             SymbolTableCollection &symbols) {
  auto mismatch = [](Operation *op, unsigned index, Type got, Type expected,
                     func::FuncOp func) {
    bool call = isa<func::CallOp>(op);
    op->emitError() << "cannot retype this " << op->getName() << ": "
                    << (call ? "operand" : "result") << " #" << index << " is "
                    << got << " but another "
                    << (call ? "call made @" : "return made @")
                    << func.getSymName() << (call ? " take " : " return ")
                    << expected;
  };
  WalkResult result = module.walk([&](Operation *op) {
    // A function taken by value keeps the type it was taken with.
    if (auto constant = dyn_cast<func::ConstantOp>(op)) {
      auto func = symbols.lookupNearestSymbolFrom<func::FuncOp>(
          constant, constant.getValueAttr());
      if (func && constant.getType() != func.getFunctionType()) {
        constant.emitError()
            << "cannot retype @" << func.getSymName()
            << " taken by value here: it becomes " << func.getFunctionType()
            << "; call it directly with func.call";
        return WalkResult::interrupt();
      }
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      for (auto [i, operand, expected] :
           llvm::enumerate(call.getOperandTypes(), callee.getArgumentTypes()))
        if (operand != expected) {
          mismatch(call, i, operand, expected, callee);
          return WalkResult::interrupt();
        }
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      auto func = ret->getParentOfType<func::FuncOp>();
      for (auto [i, operand, expected] :
           llvm::enumerate(ret.getOperandTypes(), func.getResultTypes()))
        if (operand != expected) {
          mismatch(ret, i, operand, expected, func);
          return WalkResult::interrupt();
        }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
