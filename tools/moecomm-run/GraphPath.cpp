//===- GraphPath.cpp - moecomm-run's compiled-graph execution --------------===//

#include "GraphPath.h"
#include "DeviceCallBuffers.h"
#include "HostRows.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/RuntimeError.h"
#include "moecomm/Workload/ToolIO.h"

#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "moecomm/InitAllDialects.h"
#include "moecomm/Model/Placement.h"
#include "moecomm/Reference/ExpertWeights.h"
#include "moecomm/Reference/Reference.h"
#include "moecomm/Pipelines/Pipeline.h"
#include "moecomm/moecomm_compiled.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Object/Binary.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits>

using namespace llvm;
using namespace moecomm::workload;

namespace moecomm::run {

namespace {

/// MLIR's C-interface memref descriptors (moecomm_compiled.h).
using MemRef1D = moecommMemRef1D;
using MemRef2D = moecommMemRef2D;

/// The C interface returns the results as one struct of descriptors, in
/// order: out, [grad_x], [recv, recv_weights, tokens_per_expert].
struct Results {
  MemRef2D out, gradX, recv;
  MemRef1D recvWeights, tokensPerExpert;
};
/// A weight argument's descriptor ([E/W][rows][cols] f32).
struct MemRef3D {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
};
using LayerFn = void (*)(void *, MemRef2D *, MemRef2D *, MemRef2D *);
using TrainingFn = void (*)(void *, MemRef2D *, MemRef2D *, MemRef2D *,
                            MemRef2D *);
using FfnLayerFn = void (*)(void *, MemRef2D *, MemRef2D *, MemRef2D *,
                            MemRef3D *, MemRef3D *, MemRef3D *);
using FfnTrainingFn = void (*)(void *, MemRef2D *, MemRef2D *, MemRef2D *,
                               MemRef2D *, MemRef3D *, MemRef3D *,
                               MemRef3D *);

/// What the entry function looks like.
struct Signature {
  bool training = false;
  /// I of the SwiGLU experts whose weights the entry takes; 0: none
  /// (identity experts).
  int64_t intermediate = 0;
  /// Whether it returns recv, recv_weights and tokens_per_expert.
  bool observesDispatch = true;
  moecommDataType_t xType = moecommBfloat16;
  moecommDataType_t idxType = moecommInt32;
};

MemRef2D descriptor(void *data, int64_t rows, int64_t cols) {
  return MemRef2D{data, data, 0, {rows, cols}, {cols, 1}};
}

MemRef3D descriptor(float *data, int64_t experts, int64_t rows, int64_t cols) {
  return MemRef3D{data, data, 0, {experts, rows, cols}, {rows * cols, cols, 1}};
}

/// The elements a contiguous descriptor covers (the product of its sizes).
template <typename MemRef> size_t elementsOf(const MemRef &m) {
  size_t elements = 1;
  for (int64_t size : m.sizes)
    elements *= static_cast<size_t>(size);
  return elements;
}

/// Releases a result buffer the graph allocated (malloc in compiled code;
/// a cuda-target graph's results were freed through DeviceCallBuffers,
/// which left `allocated` null).
template <typename MemRef> void release(MemRef &m) {
  std::free(m.allocated);
  m.allocated = nullptr;
}

std::string typeString(mlir::Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// The IR's wire dtype of FP8 payload type `type`.
mlir::moecomm::WireDtype wireDtypeOf(PayloadType type) {
  return type == PayloadType::MXFP8      ? mlir::moecomm::WireDtype::mxfp8
         : type == PayloadType::FP8UE8M0 ? mlir::moecomm::WireDtype::fp8_e4m3_ue8m0
                                         : mlir::moecomm::WireDtype::fp8_e4m3;
}

/// The built-in layer graph for `p`: dispatch -> identity experts -> weighted
/// combine, returning what the contract asks for.
std::string builtinGraph(const RoutingProblem &p) {
  const char *elt = hostType(p.dtype) == moecommFloat32 ? "f32" : "bf16";
  std::string rows = formatv("tensor<?x{0}x{1}>", p.hidden, elt).str();
  std::string topo =
      formatv("ranks = {0}, ranks_per_node = {1}, experts = {2}", p.ranks,
              p.ranksPerNode, p.numExperts)
          .str();
  std::string wire =
      isFp8(p.dtype)
          ? formatv(" wire<{0}>", mlir::moecomm::stringifyWireDtype(
                                      wireDtypeOf(p.dtype)))
                .str()
          : "";
  std::string capacity =
      p.capacity ? formatv(" capacity({0})", p.capacity).str() : "";
  return formatv(R"mlir(
func.func @moe_layer(%x: {0}, %idx: tensor<?x{1}xi32>, %w: tensor<?x{1}xf32>)
    -> ({0}, {0}, tensor<?xf32>, tensor<?xi64>) attributes {{llvm.emit_c_interface} {{
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<{2}>{3}{4}
      : {0}, tensor<?x{1}xi32>, tensor<?x{1}xf32>
  %out = moecomm.combine %recv, %h weighted
      : {0}, !moecomm.handle<{2}> -> {0}
  %counts = tensor.cast %tpe : tensor<{5}xi64> to tensor<?xi64>
  return %out, %recv, %rw, %counts : {0}, {0}, tensor<?xf32>, tensor<?xi64>
}
)mlir",
                 rows, p.topk, topo, wire, capacity, p.localExperts())
      .str();
}

/// Checks the entry function against the contract (GraphPath.h).
Expected<Signature> checkSignature(mlir::func::FuncOp func,
                                   const RoutingProblem &p,
                                   StringRef entry) {
  auto fail = [&](const Twine &why) -> Expected<Signature> {
    return inputError(formatv("graph entry @{0}: {1}", entry, why.str()));
  };
  mlir::FunctionType type = func.getFunctionType();
  Signature sig;
  const unsigned inputs = type.getNumInputs();
  sig.training = inputs == 4 || inputs == 7;
  if (inputs != 3 && inputs != 4 && inputs != 6 && inputs != 7)
    return fail(formatv("expected 3 arguments (x, topk_idx, topk_weights) or 4 "
                        "(and grad_out), got {0} (either may be followed by "
                        "the expert weights w_gate, w_up, w_down)",
                        inputs));
  const unsigned tokenInputs = sig.training ? 4 : 3;
  unsigned outputs = sig.training ? 2 : 1;
  if (type.getNumResults() != outputs && type.getNumResults() != outputs + 3)
    return fail(formatv("expected {0} result(s) ({1}) or {2} (and recv, "
                        "recv_weights, tokens_per_expert), got {3}",
                        outputs, sig.training ? "out, grad_x" : "out",
                        outputs + 3, type.getNumResults()));
  sig.observesDispatch = type.getNumResults() == outputs + 3;
  auto tensor = [](mlir::Type t) {
    return llvm::dyn_cast<mlir::RankedTensorType>(t);
  };
  auto x = tensor(type.getInput(0));
  if (!x || x.getRank() != 2 || x.getDimSize(1) != p.hidden ||
      !(x.getElementType().isBF16() || x.getElementType().isF32()))
    return fail(
        formatv("x must be tensor<?x{0}xbf16|f32> (the routing's hidden "
                "size), got {1}; give the graph's model with --config "
                "or its H with --hidden",
                p.hidden, typeString(type.getInput(0))));
  sig.xType = x.getElementType().isF32() ? moecommFloat32 : moecommBfloat16;
  if (sig.xType != hostType(p.dtype))
    return fail(formatv("x is {0} but the routing's dtype needs {1} rows",
                        typeString(x.getElementType()),
                        hostType(p.dtype) == moecommFloat32 ? "f32" : "bf16"));
  auto idx = tensor(type.getInput(1));
  if (!idx || idx.getRank() != 2 || idx.getDimSize(1) != p.topk ||
      !(idx.getElementType().isInteger(32) ||
        idx.getElementType().isInteger(64)))
    return fail(formatv("topk_idx must be tensor<?x{0}xi32|i64> (the routing's "
                        "topk), got {1}",
                        p.topk, typeString(type.getInput(1))));
  sig.idxType =
      idx.getElementType().isInteger(32) ? moecommInt32 : moecommInt64;
  // Ids are handed over as the graph's element type: one it cannot hold
  // would be truncated into another id (4294967296 into 0).
  if (sig.idxType == moecommInt32)
    for (auto [rank, ids] : llvm::enumerate(p.topkIdx))
      for (auto [i, id] : llvm::enumerate(ids))
        if (id < std::numeric_limits<int32_t>::min() ||
            id > std::numeric_limits<int32_t>::max())
          return fail(formatv("rank {0} token {1} slot {2}: expert id {3} "
                              "does not fit topk_idx's element type i32",
                              rank, i / p.topk, i % p.topk, id));
  if (type.getInput(2) != idx.clone(mlir::Float32Type::get(func.getContext())))
    return fail(formatv("topk_weights must be {0}, got {1}",
                        typeString(idx.clone(mlir::Float32Type::get(
                            func.getContext()))),
                        typeString(type.getInput(2))));
  if (sig.training && type.getInput(3) != x)
    return fail(formatv("grad_out must have x's type {0}, got {1}",
                        typeString(x), typeString(type.getInput(3))));
  // Every rank passes its own token count: a static one must be every
  // rank's, in each argument and result with a token dimension (the code
  // would read or write that many rows of the run's buffers).
  auto checkTokens = [&](mlir::Type t, StringRef name) -> Error {
    auto ranked = tensor(t);
    if (!ranked || ranked.getRank() < 1 || ranked.isDynamicDim(0))
      return Error::success();
    for (int64_t tokens : p.numTokens)
      if (tokens != ranked.getDimSize(0))
        return fail(formatv("{0} has a static token count {1} but a rank has "
                            "{2} tokens; make the first dimension dynamic",
                            name, ranked.getDimSize(0), tokens))
            .takeError();
    return Error::success();
  };
  const char *argNames[] = {"x", "topk_idx", "topk_weights", "grad_out"};
  for (unsigned i = 0; i < tokenInputs; ++i)
    if (Error e = checkTokens(type.getInput(i), argNames[i]))
      return std::move(e);
  for (unsigned i = 0; i < outputs; ++i)
    if (Error e = checkTokens(type.getResult(i), i == 0 ? "out" : "grad_x"))
      return std::move(e);

  // Expert weights: moecomm-run fills f32 buffers in nn.Linear's layout,
  // [E/W][I][H] (gate, up) and [E/W][H][I] (down); the graph must read
  // exactly those.
  mlir::Type f32 = mlir::Float32Type::get(func.getContext());
  if (inputs > tokenInputs) {
    auto gate = tensor(type.getInput(tokenInputs));
    if (!gate || gate.getRank() != 3 || gate.getElementType() != f32 ||
        gate.isDynamicDim(1) || gate.getDimSize(1) < 1 ||
        gate.getDimSize(2) != p.hidden)
      return fail(formatv("w_gate must be tensor<?xIx{0}xf32> ([E/W, I, H] "
                          "f32, nn.Linear's [out, in], with a static "
                          "intermediate size I >= 1), got {1}",
                          p.hidden, typeString(type.getInput(tokenInputs))));
    sig.intermediate = gate.getDimSize(1);
    const int64_t I = sig.intermediate, H = p.hidden;
    const int64_t local = p.localExperts();
    const struct {
      const char *name;
      int64_t rows, cols;
    } expected[] = {{"w_gate", I, H}, {"w_up", I, H}, {"w_down", H, I}};
    for (unsigned w = 0; w < 3; ++w) {
      auto t = tensor(type.getInput(tokenInputs + w));
      if (t && t.getRank() == 3 && t.getElementType() == f32 &&
          (t.isDynamicDim(0) || t.getDimSize(0) == local) &&
          t.getDimSize(1) == expected[w].rows &&
          t.getDimSize(2) == expected[w].cols)
        continue;
      return fail(formatv("{0} must be tensor<?x{1}x{2}xf32> (or {3} local "
                          "experts first; I = {4} from w_gate), got {5}",
                          expected[w].name, expected[w].rows,
                          expected[w].cols, local, I,
                          typeString(type.getInput(tokenInputs + w))));
    }
  }

  // The results are read through their descriptors: ranks and element types
  // must be what the contract says.
  mlir::Type i64 = mlir::IntegerType::get(func.getContext(), 64);
  auto checkResult = [&](unsigned i, StringRef name, int64_t rank,
                         mlir::Type element, int64_t cols) -> Error {
    auto t = tensor(type.getResult(i));
    if (t && t.getRank() == rank && t.getElementType() == element &&
        (rank == 1 || t.getDimSize(1) == cols))
      return Error::success();
    std::string want =
        rank == 1
            ? formatv("tensor<?x{0}>", typeString(element)).str()
            : formatv("tensor<?x{0}x{1}>", cols, typeString(element)).str();
    return inputError(formatv("graph entry @{0}: result {1} ({2}) must be {3}, "
                              "got {4}",
                              entry, i, name, want,
                              typeString(type.getResult(i))));
  };
  SmallVector<std::tuple<StringRef, int64_t, mlir::Type, int64_t>> results = {
      {"out", 2, x.getElementType(), p.hidden}};
  if (sig.training)
    results.push_back({"grad_x", 2, x.getElementType(), p.hidden});
  if (sig.observesDispatch) {
    results.push_back({"recv", 2, x.getElementType(), p.hidden});
    results.push_back({"recv_weights", 1, f32, 0});
    results.push_back({"tokens_per_expert", 1, i64, 0});
  }
  for (auto [i, r] : llvm::enumerate(results))
    if (Error e = checkResult(i, std::get<0>(r), std::get<1>(r), std::get<2>(r),
                              std::get<3>(r)))
      return std::move(e);
  return sig;
}

/// `entry` and, transitively, the functions it calls.
SmallVector<mlir::func::FuncOp> reachableFunctions(mlir::func::FuncOp entry) {
  SmallVector<mlir::func::FuncOp> functions = {entry};
  DenseSet<mlir::Operation *> seen = {entry};
  for (size_t i = 0; i < functions.size(); ++i)
    functions[i].walk([&](mlir::func::CallOp call) {
      if (auto callee =
              mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
                  call, call.getCalleeAttr());
          callee && seen.insert(callee).second)
        functions.push_back(callee);
    });
  return functions;
}

/// "file:line:col: " of `op`, or "" when it has no file location.
std::string where(mlir::Operation *op) {
  if (auto loc = llvm::dyn_cast<mlir::FileLineColLoc>(op->getLoc()))
    return formatv("{0}:{1}:{2}: ", loc.getFilename().getValue(), loc.getLine(),
                   loc.getColumn())
        .str();
  return "";
}

/// The payload type of rows sent as `wire`.
PayloadType payloadTypeOf(mlir::moecomm::WireDtype wire) {
  switch (wire) {
  case mlir::moecomm::WireDtype::f32:
    return PayloadType::F32;
  case mlir::moecomm::WireDtype::bf16:
    return PayloadType::BF16;
  case mlir::moecomm::WireDtype::fp8_e4m3:
    return PayloadType::FP8;
  case mlir::moecomm::WireDtype::fp8_e4m3_ue8m0:
    return PayloadType::FP8UE8M0;
  case mlir::moecomm::WireDtype::mxfp8:
    return PayloadType::MXFP8;
  }
  llvm_unreachable("unknown wire dtype");
}

/// The expert placement of the collectives the entry runs: a graph's is its
/// topologies' (`slots`, `placement`, `replica_choice`; --placement is the
/// direct path's), read before the pipeline, whose ranks= retarget keeps it
/// (or fails). Every collective with experts must have the same one (or
/// none); it must be valid for the run's ranks and the routing's experts.
/// Sets p.slotExperts and p.replicaChoice, which the oracle then follows.
Error applyGraphPlacement(ArrayRef<mlir::func::FuncOp> functions,
                          RoutingProblem &p) {
  std::optional<std::pair<mlir::Operation *, mlir::moecomm::TopologyAttr>>
      first;
  for (mlir::func::FuncOp func : functions) {
    Error error = Error::success();
    func.walk([&](mlir::Operation *op) {
      for (mlir::NamedAttribute attr : op->getAttrs()) {
        auto topology =
            llvm::dyn_cast<mlir::moecomm::TopologyAttr>(attr.getValue());
        if (!topology || topology.getExperts() == 0)
          continue;
        if (!first) {
          first = {op, topology};
          continue;
        }
        mlir::moecomm::TopologyAttr other = first->second;
        if (topology.getPlacement() == other.getPlacement() &&
            topology.getReplicaChoice() == other.getReplicaChoice())
          continue;
        error = inputError(formatv(
            "{0}{1} in @{2} has another expert placement than {3}{4}; a run "
            "has one",
            where(op), op->getName().getStringRef(), func.getSymName(),
            where(first->first), first->first->getName().getStringRef()));
        return mlir::WalkResult::interrupt();
      }
      return mlir::WalkResult::advance();
    });
    if (error)
      return error;
  }
  if (!first || !first->second.getPlacement())
    return Error::success();
  ArrayRef<int64_t> slots = first->second.getPlacement().asArrayRef();
  std::string message = ::moecomm::checkPlacement(
      {p.numExperts, std::vector<int64_t>(slots.begin(), slots.end())},
      p.ranks);
  if (!message.empty())
    return inputError(formatv("{0}{1}: {2}", where(first->first),
                              first->first->getName().getStringRef(),
                              message));
  p.slotExperts.assign(slots.begin(), slots.end());
  p.replicaChoice =
      static_cast<moecommReplicaChoice_t>(first->second.getReplicaChoice());
  return Error::success();
}

/// Checks the collectives the entry runs, and its permute_tokens, against
/// the routing's experts (the pipeline retargets their ranks, not their
/// experts) and takes the wire dtype and capacity their dispatches declare
/// into `p`, as `options` allow.
Error applyGraphRouting(ArrayRef<mlir::func::FuncOp> functions,
                        const GraphOptions &options, RoutingProblem &p) {
  std::optional<std::pair<mlir::Operation *, PayloadType>> wire;
  std::optional<std::pair<mlir::Operation *, int64_t>> capacity;
  for (mlir::func::FuncOp func : functions) {
    Error error = Error::success();
    // Records `op`'s declared capacity; false (with `error`) when another
    // collective declared a different one.
    auto takeCapacity = [&](mlir::Operation *op, int64_t c) {
      if (capacity && capacity->second != c) {
        error = inputError(formatv(
            "{0}{1} declares capacity {2} but {3}{4} declares {5}; choose "
            "one with --capacity",
            where(op), op->getName().getStringRef(), c,
            where(capacity->first), capacity->first->getName().getStringRef(),
            capacity->second));
        return false;
      }
      capacity = {op, c};
      return true;
    };
    func.walk([&](mlir::Operation *op) {
      // Whether `experts`, which `op` `does` over, is not the routing's
      // (then `error` says so).
      auto otherExperts = [&](int64_t experts, StringRef does) {
        if (experts == p.numExperts)
          return false;
        error =
            inputError(formatv("{0}{1} in @{2} {3} over {4} experts but "
                               "the routing has {5}",
                               where(op), op->getName().getStringRef(),
                               func.getSymName(), does, experts, p.numExperts));
        return true;
      };
      for (mlir::NamedAttribute attr : op->getAttrs()) {
        auto topology =
            llvm::dyn_cast<mlir::moecomm::TopologyAttr>(attr.getValue());
        // experts = 0: a plain all_to_all, which has none.
        if (topology && topology.getExperts() != 0 &&
            otherExperts(topology.getExperts(), "routes"))
          return mlir::WalkResult::interrupt();
      }
      // A framework's per-expert layer sorts its rows over its own expert
      // count, which must be the routing's as well.
      if (auto permute = llvm::dyn_cast<mlir::moecomm::PermuteTokensOp>(op);
          permute && otherExperts(permute.getExperts(), "sorts"))
        return mlir::WalkResult::interrupt();
      // A staged graph declares its capacity on the layout.
      if (auto layout = llvm::dyn_cast<mlir::moecomm::LayoutOp>(op))
        if (std::optional<uint64_t> c = layout.getCapacity())
          if (!takeCapacity(op, static_cast<int64_t>(*c)))
            return mlir::WalkResult::interrupt();
      auto dispatch = llvm::dyn_cast<mlir::moecomm::DispatchOp>(op);
      if (!dispatch)
        return mlir::WalkResult::advance();
      if (std::optional<mlir::moecomm::WireDtype> w = dispatch.getWire()) {
        PayloadType type = payloadTypeOf(*w);
        if (wire && wire->second != type) {
          error = inputError(formatv(
              "{0}dispatch declares wire {1} but {2}dispatch declares {3}; "
              "choose one with --wire-dtype",
              where(op), payloadTypeName(type), where(wire->first),
              payloadTypeName(wire->second)));
          return mlir::WalkResult::interrupt();
        }
        wire = {op, type};
      }
      if (std::optional<uint64_t> c = dispatch.getCapacity())
        if (!takeCapacity(op, static_cast<int64_t>(*c)))
          return mlir::WalkResult::interrupt();
      return mlir::WalkResult::advance();
    });
    if (error)
      return error;
  }
  if (wire && options.wireFromGraph)
    p.dtype = wire->second;
  if (capacity && options.capacityFromGraph)
    p.capacity = capacity->second;
  return Error::success();
}

/// The pipeline's wire-dtype option that sends rows of `type`.
mlir::moecomm::WireDtypeOption wireDtypeOption(PayloadType type) {
  switch (type) {
  case PayloadType::BF16:
    return mlir::moecomm::WireDtypeOption::bf16;
  case PayloadType::F32:
    return mlir::moecomm::WireDtypeOption::f32;
  case PayloadType::FP8:
    return mlir::moecomm::WireDtypeOption::fp8_e4m3;
  case PayloadType::FP8UE8M0:
    return mlir::moecomm::WireDtypeOption::fp8_e4m3_ue8m0;
  case PayloadType::MXFP8:
    return mlir::moecomm::WireDtypeOption::mxfp8;
  }
  llvm_unreachable("unknown payload type");
}

/// Checks an --aot library against the graph given with it, before it is
/// called: the library's code has the static shapes (hidden size, K, T) of
/// the graph it was built from, and a graph with other shapes makes the run
/// pass descriptors the code reads out of bounds. Libraries built by
/// moecomm-aot or moecomm_add_aot_graph export that graph's text
/// (moecomm_aot_graph_source, cmake/EmbedGraphSource.cmake): its entry must
/// have the signature of `entry`, which the run was checked against. A
/// library without it (built otherwise) is taken on trust.
Error checkAotSource(void *library, const GraphOptions &options,
                     mlir::func::FuncOp entry, mlir::MLIRContext &context) {
  const auto *text = static_cast<const char *>(
      ::dlsym(library, "moecomm_aot_graph_source"));
  const auto *size = static_cast<const int64_t *>(
      ::dlsym(library, "moecomm_aot_graph_source_size"));
  if (!text || !size)
    return Error::success();
  auto refuse = [&](const Twine &why) {
    return inputError(formatv("--aot {0} was built from a graph {1}; rebuild "
                              "it from {2} (moecomm-aot) or give the graph it "
                              "was built from",
                              options.aotLibrary, why.str(), options.file));
  };
  // Diagnostics of the recorded text are not the user's graph's.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> built =
      mlir::parseSourceString<mlir::ModuleOp>(
          StringRef(text, static_cast<size_t>(*size)), &context,
          options.aotLibrary);
  if (!built)
    return refuse("this moecomm-run cannot parse");
  auto builtEntry = built->lookupSymbol<mlir::func::FuncOp>(entry.getName());
  if (!builtEntry)
    return refuse(formatv("without @{0}", entry.getName()));
  if (builtEntry.getFunctionType() != entry.getFunctionType())
    return refuse(formatv("whose @{0} has type {1}, but {2} declares {3}",
                          entry.getName(),
                          typeString(builtEntry.getFunctionType()),
                          options.file, typeString(entry.getFunctionType())));
  return Error::success();
}

/// Checks that an --aot library was built for the run's target. Code built
/// for target=cuda allocates its buffers with moecomm_rt_alloc
/// (moecomm-device-buffers) and host code never calls it, so the library's
/// undefined dynamic symbols tell the two apart; run on the other kind of
/// thread, a library's results would be freed by the wrong party (free() of
/// the runtime's buffers, or the reverse). A library that is not ELF is
/// taken on trust.
Error checkAotTarget(const GraphOptions &options) {
  Expected<llvm::object::OwningBinary<llvm::object::Binary>> binary =
      llvm::object::createBinary(options.aotLibrary);
  if (!binary)
    return inputError(formatv("--aot {0}: {1}", options.aotLibrary,
                              toString(binary.takeError())));
  const auto *elf =
      dyn_cast<llvm::object::ELFObjectFileBase>(binary->getBinary());
  if (!elf)
    return Error::success();
  bool cuda = false;
  for (const llvm::object::ELFSymbolRef &symbol :
       elf->getDynamicSymbolIterators()) {
    Expected<StringRef> name = symbol.getName();
    Expected<uint32_t> flags = symbol.getFlags();
    if (!name || !flags) {
      consumeError(name.takeError());
      consumeError(flags.takeError());
      continue;
    }
    cuda = cuda || (*name == "_mlir_ciface_moecomm_rt_alloc" &&
                    (*flags & llvm::object::SymbolRef::SF_Undefined));
  }
  if (cuda == (options.target == mlir::moecomm::Target::cuda))
    return Error::success();
  if (cuda)
    return inputError(formatv("--aot {0} was built for target cuda (its "
                              "buffers come from moecomm_rt_alloc): run it "
                              "with --target cuda (or --backend nccl)",
                              options.aotLibrary));
  return inputError(formatv("--aot {0} was built for target host: rebuild it "
                            "with moecomm-aot --target cuda to run it with "
                            "{1}",
                            options.aotLibrary,
                            options.gpu ? "--backend nccl" : "--target cuda"));
}

} // namespace

/// A graph ready to call: its entry point and whatever keeps the code alive.
class CompiledGraph {
public:
  ~CompiledGraph() {
    if (library)
      ::dlclose(library);
  }
  Signature signature;
  void *entry = nullptr;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void *library = nullptr;
  std::string label;
  /// Dispatches (or layouts, in a staged graph) the entry reaches, before the
  /// overlap schedule chunks them.
  int dispatches = 0;
  /// The graph was staged before (it has layouts): its stages keep the wire
  /// dtype and capacity they were written with, whatever the pipeline asks.
  bool staged = false;
  /// Seed of the expert weights (GraphOptions::weightSeed).
  uint64_t weightSeed = 1;
  /// GraphOptions::target.
  mlir::moecomm::Target target = mlir::moecomm::Target::host;
  /// The pipeline's warnings (graphWarnings).
  std::vector<std::string> warnings;
};

Expected<std::shared_ptr<CompiledGraph>>
compileGraph(const GraphOptions &options, RoutingProblem &problem) {
  mlir::DialectRegistry registry;
  mlir::moecomm::registerAllDialects(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto graph = std::make_shared<CompiledGraph>();
  graph->target = options.target;
  // Errors become one line of the error; warnings are kept for the caller
  // (remarks, e.g. the overlap schedule's, are dropped).
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error &&
        d.getSeverity() != mlir::DiagnosticSeverity::Warning)
      return mlir::success();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << d.getLocation() << ": " << d;
    for (char &c : text)
      if (c == '\n')
        c = ' ';
    if (d.getSeverity() == mlir::DiagnosticSeverity::Warning)
      graph->warnings.push_back(text);
    else if (diagnostics.empty())
      diagnostics = text;
    return mlir::success();
  });
  auto graphError = [&](StringRef what) {
    std::string line = diagnostics.empty() ? what.str()
                                           : (what + ": " + diagnostics).str();
    for (char &c : line)
      if (c == '\n')
        c = ' ';
    return inputError(line);
  };

  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (options.file.empty()) {
    module = mlir::parseSourceString<mlir::ModuleOp>(builtinGraph(problem),
                                                     &context, "builtin-graph");
    graph->label = "built-in layer graph";
  } else {
    Expected<std::string> text =
        readInputFile(options.file, "graph", /*allowStdin=*/true);
    if (!text)
      return text.takeError();
    module = mlir::parseSourceString<mlir::ModuleOp>(*text, &context,
                                                     options.file);
    graph->label = options.file;
  }
  if (!module)
    return graphError(formatv("cannot load graph {0}",
                              options.file.empty() ? "(built-in)"
                                                   : options.file)
                          .str());
  auto func = module->lookupSymbol<mlir::func::FuncOp>(options.entry);
  if (!func)
    return inputError(formatv("graph {0} has no function @{1} (see --entry)",
                              graph->label, options.entry));
  SmallVector<mlir::func::FuncOp> reachable = reachableFunctions(func);
  // Before the signature, whose per-expert shapes are per slot with one.
  if (Error e = applyGraphPlacement(reachable, problem))
    return std::move(e);
  Expected<Signature> sig = checkSignature(func, problem, options.entry);
  if (!sig)
    return sig.takeError();
  graph->signature = *sig;
  graph->weightSeed = options.weightSeed;
  if (Error e = applyGraphRouting(reachable, options, problem))
    return std::move(e);
  int dispatchOps = 0, allToAlls = 0;
  mlir::Operation *otherRows = nullptr;
  mlir::Type xType = func.getArgumentTypes()[0];
  for (mlir::func::FuncOp f : reachable)
    f.walk([&](mlir::Operation *op) {
      if (auto cached = llvm::dyn_cast<mlir::moecomm::CachedDispatchOp>(op);
          cached && !otherRows &&
          cached.getX().getType().getElementType() !=
              mlir::getElementTypeOrSelf(xType))
        otherRows = op;
      if (llvm::isa<mlir::moecomm::DispatchOp, mlir::moecomm::LayoutOp>(op))
        ++graph->dispatches;
      if (llvm::isa<mlir::moecomm::LayoutOp>(op))
        graph->staged = true;
      dispatchOps += llvm::isa<mlir::moecomm::DispatchOp>(op);
      allToAlls += llvm::isa<mlir::moecomm::AllToAllOp>(op);
    });
  // The oracle's model of a graph (docs/moecomm-run.md, "Graphs"): its
  // rows move either by layouts or by all_to_alls, whose traffic and row
  // counts it checks differently; and a training step runs its backward on
  // the forward's layout, so its bounds count one layout twice.
  if (graph->dispatches > 0 && allToAlls > 0)
    return inputError(formatv(
        "{0}: @{1} exchanges rows by moecomm.dispatch and by "
        "moecomm.all_to_all; moecomm-run checks a graph of one kind (the "
        "remarks of --moecomm-raise-dispatch say why a per-expert chain "
        "stayed)",
        graph->label, options.entry));
  // Its byte bounds count the backward's rows in x's dtype.
  if (otherRows)
    return inputError(formatv(
        "{0}: @{1}'s tokens are {2} but {3}moecomm.cached_dispatch moves {4} "
        "rows; moecomm-run counts a backward's rows in the tokens' dtype",
        graph->label, options.entry, mlir::getElementTypeOrSelf(xType),
        where(otherRows),
        llvm::cast<mlir::moecomm::CachedDispatchOp>(otherRows)
            .getX()
            .getType()
            .getElementType()));
  if (graph->signature.training && dispatchOps > 1)
    return inputError(formatv(
        "{0}: the training step @{1} has {2} moecomm.dispatch ops; "
        "moecomm-run checks one layout per step, which the backward moves "
        "its rows along (moecomm.cached_dispatch on the forward's handle)",
        graph->label, options.entry, dispatchOps));
  std::string symbol = "_mlir_ciface_" + options.entry;

  if (!options.aotLibrary.empty()) {
    graph->library = ::dlopen(options.aotLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!graph->library)
      return inputError(formatv("--aot {0}: {1}", options.aotLibrary,
                                ::dlerror()));
    graph->entry = ::dlsym(graph->library, symbol.c_str());
    if (!graph->entry)
      return inputError(formatv("--aot {0} has no {1}; was it built from {2} "
                                "with llvm.emit_c_interface on @{3}?",
                                options.aotLibrary, symbol, graph->label,
                                options.entry));
    if (Error e = checkAotSource(graph->library, options, func, context))
      return std::move(e);
    if (Error e = checkAotTarget(options))
      return std::move(e);
    graph->label += " (AOT " + options.aotLibrary + ")";
    return graph;
  }

  // Only the entry and what it calls are compiled: the other functions of a
  // file may be written for another expert count (the DeepSeek-V3 example's
  // scaled @ffn_* functions), which a retarget to this run's ranks need not
  // fit, and would only cost compile time.
  {
    DenseSet<mlir::Operation *> keep;
    for (mlir::func::FuncOp f : reachable)
      keep.insert(f);
    SmallVector<mlir::func::FuncOp> unused;
    for (auto f : module->getOps<mlir::func::FuncOp>())
      if (!keep.contains(f) &&
          mlir::SymbolTable::symbolKnownUseEmpty(f, *module))
        unused.push_back(f);
    for (mlir::func::FuncOp f : unused)
      f.erase();
  }
  func->setAttr("llvm.emit_c_interface", mlir::UnitAttr::get(&context));
  // The run's capacity (--capacity, else the graph's, else the routing's)
  // goes into the IR itself: the pipeline's `capacity` option can only set
  // one (its 0 means "keep the IR's"), so `--capacity 0` could not remove
  // what a graph declares. The run's align (--align, default 1) likewise.
  mlir::Builder builder(&context);
  module->walk([&](mlir::Operation *op) {
    if (!llvm::isa<mlir::moecomm::DispatchOp, mlir::moecomm::LayoutOp>(op))
      return;
    if (problem.capacity > 0)
      op->setAttr("capacity", builder.getI64IntegerAttr(problem.capacity));
    else
      op->removeAttr("capacity");
    if (problem.align > 1)
      op->setAttr("align", builder.getI64IntegerAttr(problem.align));
    else
      op->removeAttr("align");
  });
  mlir::moecomm::PipelineOptions pipeline;
  pipeline.ranks = problem.ranks;
  pipeline.ranksPerNode = problem.ranksPerNode;
  pipeline.strategy = static_cast<mlir::moecomm::Strategy>(options.strategy);
  // The routing's dtype decides the wire, whatever the graph says.
  pipeline.wireDtype = wireDtypeOption(problem.dtype);
  pipeline.capacity = 0; // the IR's, set above
  pipeline.chunks = options.chunks;
  pipeline.preset = options.preset;
  pipeline.tokensPerRank =
      std::max<int64_t>(1, problem.totalTokens() / problem.ranks);
  pipeline.target = options.target;
  mlir::PassManager pm(&context);
  mlir::moecomm::buildMoECommPipeline(pm, pipeline);
  if (mlir::failed(pm.run(*module)))
    return graphError(formatv("moecomm-pipeline failed on {0}", graph->label)
                          .str());
  // moecomm-device-buffers' warning: host code reads or writes device
  // buffers, which the host device runs but a GPU would fault on.
  if (options.gpu)
    for (const std::string &warning : graph->warnings)
      if (StringRef(warning).contains(": target=cuda: "))
        return inputError(formatv("--backend nccl cannot run {0}: {1}",
                                  graph->label, warning));

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  mlir::ExecutionEngineOptions engineOptions;
  // `transformer` is a function_ref: the function must outlive create().
  std::function<Error(llvm::Module *)> optimize =
      mlir::makeOptimizingTransformer(2, 0, nullptr);
  engineOptions.transformer = optimize;
  auto engine = mlir::ExecutionEngine::create(*module, engineOptions);
  if (!engine)
    return inputError(formatv("cannot JIT {0}: {1}", graph->label,
                              toString(engine.takeError())));
  graph->engine = std::move(*engine);
  Expected<void *> entry = graph->engine->lookup(symbol);
  if (!entry)
    return inputError(formatv("cannot find {0} in {1}: {2}", symbol,
                              graph->label, toString(entry.takeError())));
  graph->entry = *entry;
  graph->label += " (JIT)";
  return graph;
}

const std::string &graphLabel(const CompiledGraph &graph) { return graph.label; }

const std::vector<std::string> &graphWarnings(const CompiledGraph &graph) {
  return graph.warnings;
}

ExpertSpec graphExperts(const CompiledGraph &graph) {
  ExpertSpec spec;
  spec.intermediate = graph.signature.intermediate;
  spec.seed = graph.weightSeed;
  spec.training = graph.signature.training;
  return spec;
}

double expertWeightBytes(const CompiledGraph &graph, const RoutingProblem &p) {
  return 3.0 * static_cast<double>(p.hidden) *
         static_cast<double>(graph.signature.intermediate) * sizeof(float);
}

GraphPath::GraphPath(std::shared_ptr<CompiledGraph> graph,
                     const ReferenceResult &reference)
    : graph(std::move(graph)), reference(reference) {
  expertWeights.resize(std::max(1, reference.problem.ranks));
}

const char *GraphPath::name() const {
  return graph->signature.training ? "graph (training step)" : "graph";
}

int GraphPath::passes() const { return graph->signature.training ? 2 : 1; }

bool GraphPath::observesDispatch() const {
  return graph->signature.observesDispatch;
}

int GraphPath::chunks() const { return observedChunks.load(); }

bool GraphPath::usesLayouts() const { return graph->dispatches > 0; }

Error GraphPath::runIteration(moecommComm_t comm, const RoutingProblem &p,
                              int rank, LayerResult &out) {
  using Clock = std::chrono::steady_clock;
  const Signature &sig = graph->signature;
  const int64_t T = p.numTokens[rank], H = p.hidden, K = p.topk;
  if (Error e = startIteration(comm, p, rank, out))
    return e;

  HostRows x(sig.xType, T * H);
  x.assign(ref::standardX(rank, T, H));
  std::vector<int32_t> idx32;
  std::vector<int64_t> idx64 = p.topkIdx[rank];
  if (sig.idxType == moecommInt32)
    idx32.assign(idx64.begin(), idx64.end());
  std::vector<float> weights = p.topkWeights[rank];
  MemRef2D xRef = descriptor(x.data(), T, H);
  MemRef2D idxRef = descriptor(sig.idxType == moecommInt32
                                   ? static_cast<void *>(idx32.data())
                                   : static_cast<void *>(idx64.data()),
                               T, K);
  MemRef2D wRef = descriptor(weights.data(), T, K);
  // The training step's grad_out is x itself (see GraphPath.h).
  MemRef2D gradRef = xRef;
  // The rank's local experts' weights: global expert rank * E/W + e, or with
  // a placement the logical expert of slot rank * S/W + e (replicas of an
  // expert share its weights).
  MemRef3D gateRef{}, upRef{}, downRef{};
  if (const int64_t I = sig.intermediate) {
    const int64_t L = p.localExperts();
    std::unique_ptr<RankWeights> &mine = expertWeights[rank];
    if (!mine) {
      mine = std::make_unique<RankWeights>();
      const size_t n = static_cast<size_t>(L * H * I);
      mine->gate.resize(n);
      mine->up.resize(n);
      mine->down.resize(n);
      for (int64_t e = 0; e < L; ++e) {
        const int64_t expert = ref::weightsExpert(p.slotExperts, rank * L + e);
        const size_t at = static_cast<size_t>(e * H * I);
        // The formula's [rows][cols] matrix, stored transposed; its fan_in
        // is its rows (H for gate and up, I for down).
        const struct {
          ref::ExpertMatrix matrix;
          int64_t rows, cols;
          std::vector<float> &out;
        } fills[] = {{ref::ExpertMatrix::Gate, H, I, mine->gate},
                     {ref::ExpertMatrix::Up, H, I, mine->up},
                     {ref::ExpertMatrix::Down, I, H, mine->down}};
        for (const auto &f : fills)
          ref::fillExpertMatrixTransposed(graph->weightSeed, expert, f.matrix,
                                          f.rows, f.cols, f.rows,
                                          f.out.data() + at);
      }
    }
    gateRef = descriptor(mine->gate.data(), L, I, H);
    upRef = descriptor(mine->up.data(), L, I, H);
    downRef = descriptor(mine->down.data(), L, H, I);
  }

  // Results land in a buffer laid out as the C interface's result struct.
  std::vector<uint64_t> raw((2 + sig.training) * sizeof(MemRef2D) / 8 +
                                2 * sizeof(MemRef1D) / 8,
                            0);
  const bool device = graph->target == mlir::moecomm::Target::cuda;
  const size_t rowBytes = sig.xType == moecommFloat32 ? 4 : 2;
  DeviceCallBuffers deviceBuffers;
  if (device) {
    // A failure is recorded in the compiled status (read after the call).
    moecommCompiledBindDevice(comm, nullptr);
    auto place = [&](auto &ref, size_t elementBytes) {
      ref.allocated = ref.aligned =
          deviceBuffers.place(ref.aligned, elementsOf(ref) * elementBytes);
    };
    place(xRef, rowBytes);
    place(idxRef, sig.idxType == moecommInt32 ? 4 : 8);
    place(wRef, sizeof(float));
    // grad_out is x's values in a buffer of its own: the graph may write
    // to neither, but an argument is one buffer.
    if (sig.training)
      place(gradRef, rowBytes);
    if (sig.intermediate) {
      place(gateRef, sizeof(float));
      place(upRef, sizeof(float));
      place(downRef, sizeof(float));
    }
    // A rank whose arguments could not be placed still calls the graph,
    // with no rows: its thread has stopped (every runtime call returns at
    // once) and its first collective shares the error with the other ranks
    // (moecomm_compiled.h, "Errors"), which would otherwise wait for it.
    if (!deviceBuffers.ok())
      for (MemRef2D *ref : {&xRef, &idxRef, &wRef, &gradRef}) {
        ref->allocated = ref->aligned = nullptr;
        ref->sizes[0] = 0;
      }
  } else {
    moecommCompiledBind(comm);
  }
  const auto start = Clock::now();
  if (sig.intermediate && sig.training)
    reinterpret_cast<FfnTrainingFn>(graph->entry)(raw.data(), &xRef, &idxRef,
                                                  &wRef, &gradRef, &gateRef,
                                                  &upRef, &downRef);
  else if (sig.intermediate)
    reinterpret_cast<FfnLayerFn>(graph->entry)(raw.data(), &xRef, &idxRef,
                                               &wRef, &gateRef, &upRef,
                                               &downRef);
  else if (sig.training)
    reinterpret_cast<TrainingFn>(graph->entry)(raw.data(), &xRef, &idxRef,
                                               &wRef, &gradRef);
  else
    reinterpret_cast<LayerFn>(graph->entry)(raw.data(), &xRef, &idxRef, &wRef);
  // The graph's work is stream-ordered: it is done once the stream is.
  if (device)
    moecommCompiledDeviceSynchronize();
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Results results{};
  {
    char *cursor = reinterpret_cast<char *>(raw.data());
    auto take = [&](auto &m) {
      std::memcpy(&m, cursor, sizeof(m));
      cursor += sizeof(m);
    };
    take(results.out);
    if (sig.training)
      take(results.gradX);
    if (sig.observesDispatch) {
      take(results.recv);
      take(results.recvWeights);
      take(results.tokensPerExpert);
    }
  }
  if (device) {
    // Results (device or host memory) are read from host copies; the
    // buffers go back to the runtime, with the arguments'.
    const bool succeeded = moecommCompiledStatus() == moecommSuccess;
    auto fetch = [&](auto &ref, size_t elementBytes) {
      if (!succeeded) {
        deviceBuffers.adopt(ref.allocated);
        ref.allocated = nullptr;
        return;
      }
      const char *data =
          static_cast<const char *>(ref.aligned) + ref.offset * elementBytes;
      ref.aligned = deviceBuffers.fetch(ref.allocated, data,
                                        elementsOf(ref) * elementBytes);
      ref.allocated = nullptr;
      ref.offset = 0;
    };
    fetch(results.out, rowBytes);
    if (sig.training)
      fetch(results.gradX, rowBytes);
    if (sig.observesDispatch) {
      fetch(results.recv, rowBytes);
      fetch(results.recvWeights, sizeof(float));
      fetch(results.tokensPerExpert, sizeof(int64_t));
    }
    deviceBuffers.release();
  }
  struct Release {
    Results &r;
    ~Release() {
      release(r.out);
      release(r.gradX);
      release(r.recv);
      release(r.recvWeights);
      release(r.tokensPerExpert);
    }
  } releaseResults{results};

  if (moecommResult_t status = moecommCompiledStatus()) {
    std::string text = formatv("compiled graph: {0}: {1}",
                               moecommGetErrorString(status),
                               moecommCompiledLastError())
                           .str();
    bool badInput = status == moecommInvalidArgument ||
                    status == moecommMismatch || status == moecommUnsupported;
    return badInput ? inputError(text) : systemError(text);
  }
  moecommCompiledStats_t stats;
  moecommCompiledGetStats(&stats);
  // An --aot library also keeps its align: its rows are padded to it.
  if (stats.layouts > 0 && graph->library && stats.align != p.align)
    return inputError(formatv("{0} pads expert segments to align {1} but this "
                              "run checks align {2}; pass --align {1}, or "
                              "rebuild the library with moecomm-aot "
                              "--pipeline \"align={2}\"",
                              graph->label, stats.align, p.align));
  // An --aot library keeps the wire dtype and capacity it was built with;
  // checking its rows against another would report wrong numbers.
  if (stats.layouts > 0 &&
      (stats.wireType != wireType(p.dtype) || stats.capacity != p.capacity)) {
    StringRef sent = "bf16";
    for (PayloadType t : {PayloadType::F32, PayloadType::FP8,
                          PayloadType::FP8UE8M0, PayloadType::MXFP8})
      if (wireType(t) == stats.wireType)
        sent = payloadTypeName(t);
    // A JIT-compiled collective-level graph was compiled for this run's
    // settings: differing ones are the tool's fault, not the user's.
    if (!graph->library && !graph->staged)
      return systemError(formatv(
          "internal error: {0} was compiled for {3} rows with capacity {4} "
          "but sends {1} rows with capacity {2}",
          graph->label, sent, stats.capacity, payloadTypeName(p.dtype),
          p.capacity));
    if (!graph->library)
      return inputError(formatv(
          "{0} is staged IR, whose stages send {1} rows with capacity {2}, "
          "but this run checks {3} with capacity {4}; pass --wire-dtype {1} "
          "--capacity {2} (0: none)",
          graph->label, sent, stats.capacity, payloadTypeName(p.dtype),
          p.capacity));
    return inputError(formatv(
        "{0} sends {1} rows with capacity {2} but this run checks {3} with "
        "capacity {4}; pass --wire-dtype {1} --capacity {2} (0: none), or "
        "rebuild the library with moecomm-aot for {3} rows and {5}",
        graph->label, sent, stats.capacity, payloadTypeName(p.dtype),
        p.capacity,
        p.capacity ? formatv("capacity {0}", p.capacity).str()
                   : std::string("no capacity")));
  }
  if (graph->dispatches > 0 && stats.layouts >= graph->dispatches) {
    out.chunks = stats.layouts / graph->dispatches;
    observedChunks.store(out.chunks);
  }
  if (Error e = runtimeError(moecommCommGetTraffic(comm, 0, &out.traffic), comm,
                             "moecommCommGetTraffic"))
    return e;

  // Results: widen rows to f32, copy the rest.
  auto rowsOf = [&](const MemRef2D &m, std::vector<float> &values) {
    HostRows rows(sig.xType, m.sizes[0] * m.sizes[1]);
    size_t bytes = (sig.xType == moecommFloat32 ? 4 : 2) * m.sizes[0] *
                   m.sizes[1];
    if (bytes)
      std::memcpy(rows.data(),
                  static_cast<char *>(m.aligned) +
                      m.offset * (sig.xType == moecommFloat32 ? 4 : 2),
                  bytes);
    rows.toFloat(values);
  };
  rowsOf(results.out, out.combine);
  out.training = sig.training;
  if (sig.training)
    rowsOf(results.gradX, out.gradX);
  out.dispatchObserved = sig.observesDispatch;
  out.recvRowsObserved = sig.observesDispatch || usesLayouts();
  out.recvRows = stats.recvRows;
  if (sig.observesDispatch) {
    out.recvRows = results.recv.sizes[0];
    rowsOf(results.recv, out.recv);
    const float *rw = static_cast<const float *>(results.recvWeights.aligned) +
                      results.recvWeights.offset;
    out.recvWeights.assign(rw, rw + results.recvWeights.sizes[0]);
    const int64_t *tpe =
        static_cast<const int64_t *>(results.tokensPerExpert.aligned) +
        results.tokensPerExpert.offset;
    out.tokensPerExpert.assign(tpe, tpe + results.tokensPerExpert.sizes[0]);
  }
  out.dropped = stats.dropped;
  out.strategy = stats.strategy;
  for (int d = 0; d < 2; ++d)
    for (int s = 0; s < stats.numStages; ++s)
      out.stages.push_back(StageInfo{static_cast<moecommDirection_t>(d), s,
                                     stats.stageScope[d][s],
                                     stats.stageSendRows[d][s],
                                     stats.stageRecvRows[d][s]});
  // Sources are not a graph output: take them from the reference's order.
  if (sig.observesDispatch && rank < static_cast<int>(reference.layout.size()))
    for (const auto &row : reference.layout[rank].rows) {
      out.sources.push_back(row.srcRank);
      out.sources.push_back(row.srcToken);
    }
  return Error::success();
}

} // namespace moecomm::run
