//===- Dialects.cpp - C API for the moecomm dialect ------------------------===//

#include "moecomm-c/Dialects.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/IR/Diagnostics.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

using namespace mlir;
using namespace mlir::moecomm;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(MoEComm, moecomm, MoECommDialect)

bool mlirAttributeIsAMoECommTopology(MlirAttribute attr) {
  return isa<TopologyAttr>(unwrap(attr));
}

MlirAttribute mlirMoECommTopologyAttrGet(MlirContext ctx, int64_t ranks,
                                         int64_t ranksPerNode, int64_t experts) {
  MLIRContext *context = unwrap(ctx);
  return wrap(TopologyAttr::getChecked(
      [&] { return emitError(UnknownLoc::get(context)); }, context, ranks,
      ranksPerNode, experts));
}

int64_t mlirMoECommTopologyAttrGetRanks(MlirAttribute attr) {
  return cast<TopologyAttr>(unwrap(attr)).getRanks();
}

int64_t mlirMoECommTopologyAttrGetRanksPerNode(MlirAttribute attr) {
  return cast<TopologyAttr>(unwrap(attr)).getRanksPerNode();
}

int64_t mlirMoECommTopologyAttrGetExperts(MlirAttribute attr) {
  return cast<TopologyAttr>(unwrap(attr)).getExperts();
}

bool mlirTypeIsAMoECommHandle(MlirType type) {
  return isa<HandleType>(unwrap(type));
}
