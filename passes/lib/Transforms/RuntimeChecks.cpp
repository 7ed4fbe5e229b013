//===- RuntimeChecks.cpp - runtime checks of lowered IR -------------------===//

#include "Transforms/RuntimeChecks.h"

#include "Conversion/MoECommToRuntime/RuntimeAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::moecomm;

RuntimeChecks::RuntimeChecks(OpBuilder &b, Operation *op, StringRef name,
                             CheckTexts &texts)
    : b(b), op(op), name(name.str()), texts(texts) {
  std::string location;
  if (auto file = dyn_cast<FileLineColLoc>(op->getLoc()))
    location = llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(),
                             file.getLine(), file.getColumn());
  else
    llvm::raw_string_ostream(location) << op->getLoc();
  where = llvm::formatv("{0} at {1}", name, location).str();
}

void RuntimeChecks::check(Value ok, StringRef what, ArrayRef<Value> values) {
  assert(values.size() <= 4 && "moecomm_rt_check takes 4 values");
  Location loc = op->getLoc();
  SmallVector<Value> args{arith::ExtUIOp::create(b, loc, b.getI32Type(), ok),
                          text(where), text(what)};
  for (size_t k = 0; k < 4; ++k)
    args.push_back(k < values.size() ? values[k]
                                     : arith::ConstantIntOp::create(
                                           b, loc, b.getI64Type(), 0));
  RuntimeAbi(b, loc, op).call("moecomm_rt_check", args);
}

Value RuntimeChecks::text(StringRef s) {
  LLVM::GlobalOp &global = texts.globals[s];
  if (!global) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&texts.symbols.getOp()->getRegion(0).front());
    global = LLVM::GlobalOp::create(
        b, op->getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), s.size() + 1),
        /*isConstant=*/true, LLVM::Linkage::Internal, name + "_check",
        b.getStringAttr(s + Twine('\0')));
    texts.symbols.insert(global);
  }
  return LLVM::AddressOfOp::create(b, op->getLoc(), global);
}
