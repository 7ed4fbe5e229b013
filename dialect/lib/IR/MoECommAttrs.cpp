//===- MoECommAttrs.cpp - moecomm attributes and types ---------------------===//

#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "moecomm/Model/Placement.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::moecomm;

#define GET_ATTRDEF_CLASSES
#include "moecomm/Dialect/MoEComm/MoECommAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "moecomm/Dialect/MoEComm/MoECommTypes.cpp.inc"

FailureOr<int64_t> mlir::moecomm::parseCount(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (succeeded(parser.parseOptionalKeyword(&keyword, {"true", "false"})))
    return parser.emitError(loc, "expected integer value, got '")
           << keyword << "'";
  int64_t value;
  if (parser.parseInteger(value))
    return failure();
  return value;
}

FailureOr<DenseI64ArrayAttr> mlir::moecomm::parsePlacement(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr))
    return failure();
  if (auto placement = dyn_cast<DenseI64ArrayAttr>(attr))
    return placement;
  return parser.emitError(loc, "expected the placement as array<i64: ...>, got ")
         << attr;
}

/// Checks W >= 1, G >= 1, W % G == 0 and, when `experts` is meaningful,
/// E >= 1 and E % W == 0 -- with `slots` S > 0 (an expert placement) the
/// ranks divide S instead. Shared by the topology attribute and the handle.
static LogicalResult verifyTopology(function_ref<InFlightDiagnostic()> emitError,
                                    int64_t ranks, int64_t ranksPerNode,
                                    int64_t experts, bool expertsRequired,
                                    int64_t slots = 0) {
  if (ranks < 1 || ranks > kMaxRanks)
    return emitError() << "ranks must be in [1, " << kMaxRanks << "], got "
                       << ranks;
  if (ranksPerNode < 1)
    return emitError() << "ranks_per_node must be >= 1, got " << ranksPerNode;
  if (ranks % ranksPerNode != 0)
    return emitError() << "ranks (" << ranks
                       << ") must be a multiple of ranks_per_node ("
                       << ranksPerNode << ")";
  if (experts < 0 || (expertsRequired && experts == 0) ||
      experts > kMaxExperts)
    return emitError() << "experts must be in [1, " << kMaxExperts
                       << "], got " << experts;
  if (slots < 0 || slots > kMaxExperts)
    return emitError() << "slots must be in [1, " << kMaxExperts << "], got "
                       << slots;
  if (slots == 0 && experts % ranks != 0)
    return emitError() << "experts (" << experts
                       << ") must be divisible by ranks (" << ranks
                       << ") so every rank hosts the same number of experts";
  return success();
}

LogicalResult TopologyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t ranks, int64_t ranksPerNode,
                                   int64_t experts, int64_t slots,
                                   DenseI64ArrayAttr placement,
                                   ReplicaChoice replicaChoice) {
  if (slots != 0 && !placement)
    return emitError() << "slots = " << slots
                       << " needs its expert placement (placement = "
                          "array<i64: ...>, the logical expert of each slot)";
  if (placement && slots == 0)
    return emitError() << "an expert placement needs its slot count (slots = "
                       << placement.size() << ")";
  if (!placement && replicaChoice != ReplicaChoice::locality)
    return emitError() << "replica_choice = "
                       << stringifyReplicaChoice(replicaChoice)
                       << " needs an expert placement to choose among";
  if (failed(verifyTopology(emitError, ranks, ranksPerNode, experts,
                            /*expertsRequired=*/false, slots)))
    return failure();
  if (!placement)
    return success();
  if (placement.size() != slots)
    return emitError() << "slots (" << slots
                       << ") must equal the placement's length ("
                       << placement.size() << ")";
  // The rule lives with the replica choice (moecomm/Model/Placement.h).
  ::moecomm::ExpertPlacement p;
  p.numLogical = experts;
  p.slotExperts.assign(placement.asArrayRef().begin(),
                       placement.asArrayRef().end());
  std::string message = ::moecomm::checkPlacement(p, static_cast<int>(ranks));
  if (!message.empty())
    return emitError() << message;
  return success();
}

LogicalResult HandleType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t ranks, int64_t ranksPerNode,
                                 int64_t experts, int64_t slots,
                                 std::optional<Strategy> strategy) {
  if (strategy == Strategy::automatic)
    return emitError() << "a handle's strategy must be concrete (per_expert, "
                          "flat or hierarchical), got auto";
  if (failed(verifyTopology(emitError, ranks, ranksPerNode, experts,
                            /*expertsRequired=*/true, slots)))
    return failure();
  if (slots != 0 && (slots < experts || slots % ranks != 0))
    return emitError() << "slots (" << slots << ") must be a multiple of ranks ("
                       << ranks << ") and at least experts (" << experts
                       << "), as the placement's it was computed with";
  return success();
}

HandleType HandleType::withStrategy(Strategy strategy) const {
  return HandleType::get(getContext(), getRanks(), getRanksPerNode(),
                         getExperts(), getSlots(), strategy);
}

void MoECommDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "moecomm/Dialect/MoEComm/MoECommAttrs.cpp.inc"
      >();
}

void MoECommDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "moecomm/Dialect/MoEComm/MoECommTypes.cpp.inc"
      >();
}
