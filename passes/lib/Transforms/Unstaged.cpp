//===- Unstaged.cpp - staged-level passes on collective-level IR ---------===//

#include "Transforms/Unstaged.h"

#include "moecomm/Dialect/MoEComm/MoEComm.h"

using namespace mlir;

void mlir::moecomm::remarkUnstaged(Operation *root, StringRef pass) {
  Operation *first = nullptr;
  int64_t count = 0;
  root->walk([&](Operation *op) {
    if (!isa<DispatchOp, CombineOp, CachedDispatchOp>(op))
      return;
    if (!first)
      first = op;
    ++count;
  });
  if (!first)
    return;
  first->emitRemark() << pass << ": left " << count
                      << " collective-level op(s) as they are (not staged "
                         "yet: run moecomm-split-hierarchical first)";
}
