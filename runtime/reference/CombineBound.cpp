//===- CombineBound.cpp - the combine's numeric contract ------------------===//

#include "moecomm/Reference/CombineBound.h"

namespace moecomm {
namespace ref {

int combineRoundings(moecommStrategy_t strategy, int dispatchStages) {
  if (strategy == moecommPerExpert || dispatchStages == 0)
    return 0;
  return dispatchStages + 1;
}

CombineBound combineBound(moecommDataType_t dataType, int topk, int roundings) {
  const bool f32 = dataType == moecommFloat32;
  const double u = f32 ? 0x1.0p-24 : 0x1.0p-8;
  const double eta = f32 ? 0x1.0p-149 : 0x1.0p-133;
  CombineBound b;
  b.relative = (roundings + 1) * u + 3.0 * topk * 0x1.0p-24;
  b.absolute = (roundings + 1 + 3.0 * topk) * eta;
  return b;
}

} // namespace ref
} // namespace moecomm
