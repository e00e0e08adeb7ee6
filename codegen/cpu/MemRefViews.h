//===- MemRefViews.h - a buffer and its views ---------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by the CPU passes that reason about who touches a buffer
// after bufferization.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_MEMREFVIEWS_H
#define KILN_CODEGEN_CPU_MEMREFVIEWS_H

#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::kiln {

/// `root` and every view of it (subviews, reshapes, casts), transitively.
inline llvm::SmallPtrSet<Value, 8> viewsOf(Value root) {
  llvm::SmallPtrSet<Value, 8> set{root};
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user); view && view.getViewSource() == v)
        for (Value r : user->getResults())
          if (set.insert(r).second)
            work.push_back(r);
  }
  return set;
}

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_MEMREFVIEWS_H
