//===- RuntimeAbi.cpp - emitting calls of the runtime's compiled-code ABI -===//

#include "Conversion/MoECommToRuntime/RuntimeAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::moecomm;

RuntimeAbi::RuntimeAbi(OpBuilder &builder, Location loc, Operation *anchor)
    : b(builder), loc(loc),
      module(SymbolTable::getNearestSymbolTable(anchor)) {}

StringRef RuntimeAbi::suffix(Type type) {
  assert((type.isBF16() || type.isF32() || type.isInteger(32) ||
          type.isInteger(64)) &&
         "no runtime ABI for this element type");
  return bufferSuffix(type);
}

StringRef RuntimeAbi::bufferSuffix(Type type) {
  if (type.isBF16())
    return "bf16";
  if (type.isF32())
    return "f32";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  if (type.isInteger(8))
    return "i8";
  if (isa<Float8E4M3FNType>(type))
    return "f8e4m3fn";
  if (isa<Float8E8M0FNUType>(type))
    return "f8e8m0fnu";
  return {};
}

StringRef RuntimeAbi::suffix(WireDtype wire) {
  assert(isFp8Wire(wire) && "no FP8 suffix for this wire");
  return wire == WireDtype::mxfp8            ? "mxfp8"
         : wire == WireDtype::fp8_e4m3_ue8m0 ? "ue8m0"
                                             : "f8";
}

ValueRange RuntimeAbi::call(StringRef name, ValueRange args,
                            TypeRange results) {
  if (!SymbolTable::lookupSymbolIn(module, name)) {
    // Declarations stay sorted by name at the top of the module: one-shot
    // bufferization visits functions in an order that can differ from run
    // to run, and the same graph must compile to the same module.
    OpBuilder::InsertionGuard guard(b);
    Block &body = module->getRegion(0).front();
    b.setInsertionPointToStart(&body);
    for (auto decl : body.getOps<func::FuncOp>()) {
      if (!decl.isDeclaration() ||
          !decl.getSymName().starts_with("moecomm_rt_"))
        break;
      if (decl.getSymName() > name)
        break;
      b.setInsertionPointAfter(decl);
    }
    auto type = FunctionType::get(b.getContext(), args.getTypes(), results);
    auto callee = func::FuncOp::create(b, loc, name, type);
    callee.setPrivate();
    // Memref arguments and results (ranked or not) travel as descriptors
    // through the C interface, as moecomm_compiled.h declares them.
    if (llvm::any_of(args.getTypes(), llvm::IsaPred<BaseMemRefType>) ||
        llvm::any_of(results, llvm::IsaPred<BaseMemRefType>))
      callee->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  }
  // The ABI's types, not the declaration's: a module may declare the name
  // with other types, which the conversion then reports
  // (checkRuntimeDeclarations) instead of building a call it cannot use.
  return func::CallOp::create(b, loc, name, results, args).getResults();
}

Value RuntimeAbi::pointer(Value value) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  return UnrealizedConversionCastOp::create(b, loc, ptr, value).getResult(0);
}

Value RuntimeAbi::wrap(Value pointer, Type type) {
  return UnrealizedConversionCastOp::create(b, loc, type, pointer).getResult(0);
}

Value RuntimeAbi::i32(int64_t value) {
  return arith::ConstantIntOp::create(b, loc, value, 32);
}

Value RuntimeAbi::i64(int64_t value) {
  return arith::ConstantIntOp::create(b, loc, value, 64);
}

Value RuntimeAbi::nullPointer() {
  return LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()));
}

Value RuntimeAbi::constantArray(StringRef prefix, ArrayRef<int64_t> values) {
  ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(values.data()),
                          values.size() * sizeof(int64_t));
  std::string name =
      (prefix + "_" + llvm::utohexstr(llvm::xxh3_64bits(bytes), true)).str();
  auto type = RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
  auto value = DenseElementsAttr::get(type, values);
  auto global = dyn_cast_or_null<LLVM::GlobalOp>(
      SymbolTable::lookupSymbolIn(module, name));
  if (!global || global.getValueOrNull() != value) {
    // After the runtime declarations (which `call` keeps first) and the
    // globals of smaller names.
    Block &body = module->getRegion(0).front();
    Block::iterator at = body.begin();
    for (; at != body.end(); ++at) {
      auto decl = dyn_cast<func::FuncOp>(*at);
      auto other = dyn_cast<LLVM::GlobalOp>(*at);
      if (!(decl && decl.isDeclaration() &&
            decl.getSymName().starts_with("moecomm_rt_")) &&
          !(other && other.getSymName().starts_with(prefix) &&
            other.getSymName() < name))
        break;
    }
    SymbolTable symbols(module);
    OpBuilder detached(b.getContext());
    global = LLVM::GlobalOp::create(
        detached, loc, LLVM::LLVMArrayType::get(b.getI64Type(), values.size()),
        /*isConstant=*/true, LLVM::Linkage::Private, name, value);
    // A different symbol of that name (a hash collision) renames this one.
    symbols.insert(global, at);
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

Value RuntimeAbi::rows(Value layout, Direction direction, int64_t step,
                       bool recv) {
  Value n = call("moecomm_rt_rows",
                 {layout, i32(static_cast<int32_t>(direction)), i64(step),
                  i32(recv)},
                 b.getI64Type())[0];
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), n);
}

FailureOr<Value>
RuntimeAbi::alloc(const bufferization::BufferizationOptions &options,
                  RankedTensorType type, Value rows) {
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  SmallVector<Value> dynamicSizes;
  if (type.getRank() > 0 && type.isDynamicDim(0))
    dynamicSizes.push_back(rows);
  return options.createAlloc(b, loc, memrefType, dynamicSizes);
}

Value RuntimeAbi::abiMemRef(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> shape(type.getRank(), ShapedType::kDynamic);
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                                       strides);
  auto abiType = MemRefType::get(shape, type.getElementType(), layout,
                                 type.getMemorySpace());
  if (abiType == type)
    return buffer;
  return memref::CastOp::create(b, loc, abiType, buffer);
}

LogicalResult mlir::moecomm::checkRuntimeDeclarations(ModuleOp module) {
  SymbolTableCollection symbols;
  WalkResult result = module.walk([&](func::CallOp call) {
    if (!call.getCallee().starts_with("moecomm_rt_"))
      return WalkResult::advance();
    auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (callee && callee.getFunctionType() == call.getCalleeType())
      return WalkResult::advance();
    InFlightDiagnostic diag = call.emitError()
                              << "'@" << call.getCallee()
                              << "' is reserved for the runtime ABI, which "
                                 "calls it as "
                              << call.getCalleeType();
    if (callee)
      diag << ", but the module declares it as "
           << callee.getFunctionType();
    else
      diag << ", but the module defines that name as something else";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}
