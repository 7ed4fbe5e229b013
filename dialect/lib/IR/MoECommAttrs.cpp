//===- MoECommAttrs.cpp - moecomm attributes and types ---------------------===//

#include "moecomm/Dialect/MoEComm/MoEComm.h"

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

/// Checks W >= 1, G >= 1, W % G == 0 and, when `experts` is meaningful,
/// E >= 1 and E % W == 0. Shared by the topology attribute and the handle.
static LogicalResult verifyTopology(function_ref<InFlightDiagnostic()> emitError,
                                    int64_t ranks, int64_t ranksPerNode,
                                    int64_t experts, bool expertsRequired) {
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
  if (experts % ranks != 0)
    return emitError() << "experts (" << experts
                       << ") must be divisible by ranks (" << ranks
                       << ") so every rank hosts the same number of experts";
  return success();
}

LogicalResult TopologyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t ranks, int64_t ranksPerNode,
                                   int64_t experts) {
  return verifyTopology(emitError, ranks, ranksPerNode, experts,
                        /*expertsRequired=*/false);
}

LogicalResult HandleType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t ranks, int64_t ranksPerNode,
                                 int64_t experts,
                                 std::optional<Strategy> strategy) {
  if (strategy == Strategy::automatic)
    return emitError() << "a handle's strategy must be concrete (per_expert, "
                          "flat or hierarchical), got auto";
  return verifyTopology(emitError, ranks, ranksPerNode, experts,
                        /*expertsRequired=*/true);
}

TopologyAttr HandleType::getTopology() const {
  return TopologyAttr::get(getContext(), getRanks(), getRanksPerNode(),
                           getExperts());
}

HandleType HandleType::withStrategy(Strategy strategy) const {
  return HandleType::get(getContext(), getRanks(), getRanksPerNode(),
                         getExperts(), strategy);
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
