//===- DynamicShapes.cpp - symbolic input sizes of a capture -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements DynamicShapes.h: choosing symbolic dims, grouping them into
// symbolic sizes, reshapes over a symbolic size, and the dynamic-vs-static
// capture comparison that decides whether a `?` graph may be reused.
//===----------------------------------------------------------------------===//
#include "capture/values/DynamicShapes.h"

#include "ir/ShapeUtils.h"

#include "capture/interp/Interp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <set>

namespace kiln {

using mlir::ShapedType;

namespace {

/// The dims kiln.mark_dynamic(t, dim) recorded on `t` (borrowed).
std::vector<int64_t> markedDims(PyObject *t) {
  std::vector<int64_t> dims;
  PyRef marked = PyRef::steal(PyObject_GetAttrString(t, "_kiln_dynamic_dims"));
  if (!marked) {
    PyErr_Clear();
    return dims;
  }
  PyRef seq = PyRef::steal(PySequence_Tuple(marked.get()));
  for (Py_ssize_t i = 0; seq && i < PyTuple_GET_SIZE(seq.get()); ++i)
    dims.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(seq.get(), i)));
  PyErr_Clear();
  return dims;
}

} // namespace

std::vector<bool> symbolicDims(const DynamicPolicy &policy, PyObject *t,
                               const std::string &sourceDesc, const TensorMeta &meta,
                               bool contiguous) {
  size_t rank = meta.sizes.size();
  std::vector<bool> dyn(rank, false);
  if (policy.forceStatic || !contiguous)
    return dyn;
  std::vector<int64_t> marked = markedDims(t);
  // dynamic=True covers the frame's tensor arguments (and tensors in its
  // tuple/list/dict arguments), not parameters and buffers read from
  // modules (Dynamo keeps those static too).
  bool argument = sourceDesc.rfind("L[", 0) == 0 &&
                  sourceDesc.find("__dict__") == std::string::npos &&
                  sourceDesc.find('.') == std::string::npos;
  for (size_t d = 0; d < rank; ++d) {
    if (meta.sizes[d] < 2 || policy.staticSizes.count(meta.sizes[d]))
      continue; // 0/1 specialization, or equal to a static size
    bool want = (policy.mode == DynamicPolicy::Mode::All && argument) ||
                std::count(marked.begin(), marked.end(), (int64_t)d) ||
                std::count(marked.begin(), marked.end(), (int64_t)d - (int64_t)rank) ||
                (policy.mode == DynamicPolicy::Mode::Auto &&
                 policy.autoDynamic.count(sourceDesc + "#" + std::to_string(d)));
    dyn[d] = want;
  }
  return dyn;
}

void addSymbolicDims(Capture &cap, int input, const std::vector<int64_t> &sizes,
                     const std::vector<bool> &dyn) {
  for (size_t d = 0; d < dyn.size(); ++d) {
    if (!dyn[d])
      continue;
    auto it = std::find_if(cap.symbols.begin(), cap.symbols.end(),
                           [&](const SymbolicSize &s) { return s.captured == sizes[d]; });
    if (it == cap.symbols.end()) {
      cap.symbols.push_back({sizes[d], {}, nullptr});
      it = cap.symbols.end() - 1;
    }
    // An input read after a derived size of its value was made (a cache
    // tensor of `past + 1`): the two cannot be told apart by value, and
    // the derived one is computed, not read. The frame specializes.
    if (it->def)
      throw Unsupported(BreakCategory::DynamicShape,
                        "an input size equals a derived symbolic size (" + sizeExprText(*it->def) +
                            ")",
                        hint::kSpecializeSizes);
    it->dims.push_back({input, (int)d});
  }
}

std::vector<int64_t> symbolicReshape(llvm::ArrayRef<int64_t> in, std::vector<int64_t> target) {
  int inDyn = 0, tDyn = 0, infer = -1;
  int64_t pIn = 1, pT = 1;
  for (int64_t s : in) {
    if (ShapedType::isDynamic(s))
      ++inDyn;
    else
      pIn *= s;
  }
  for (size_t i = 0; i < target.size(); ++i) {
    if (ShapedType::isDynamic(target[i]))
      ++tDyn;
    else if (target[i] == -1) {
      if (infer >= 0)
        throw Unsupported(BreakCategory::UserError, "reshape with two -1");
      infer = (int)i;
    } else if (target[i] < 0)
      throw Unsupported(BreakCategory::UserError, "reshape: negative size");
    else
      pT *= target[i];
  }
  if (inDyn != 1 || tDyn > 1)
    throw Unsupported(BreakCategory::DynamicShape,
                      "reshape between shapes with symbolic sizes other than one symbolic dim "
                      "on each side",
                      hint::kSpecializeSizes);
  if (tDyn == 1 && infer >= 0) {
    // x.view(x.shape[0], -1): the symbolic target size is the input's one
    // (the static re-capture checks it), the -1 takes the static rest.
    if (pT == 0 || pIn % pT)
      throw Unsupported(BreakCategory::DynamicShape, "reshape: invalid shape");
    target[infer] = pIn / pT;
  } else if (tDyn == 1) {
    if (pIn != pT)
      throw Unsupported(BreakCategory::DynamicShape, "reshape: element count mismatch");
  } else if (infer >= 0) {
    // x.view(-1, 64): the -1 becomes the symbolic size.
    if (pT == 0 || pIn % pT)
      throw Unsupported(BreakCategory::DynamicShape,
                        "reshape: a symbolic size is not a multiple of the rest",
                        hint::kSpecializeSizes);
    target[infer] = ShapedType::kDynamic;
  } else {
    throw Unsupported(BreakCategory::DynamicShape, "reshape of a symbolic size to a static shape",
                      hint::kSpecializeSizes);
  }
  return target;
}

bool convolvesSymbolicBatch(mlir::ModuleOp module) {
  bool found = false;
  module.walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() == "kiln.conv2d")
      found |= llvm::cast<mlir::RankedTensorType>(op->getOperand(0).getType()).isDynamicDim(0);
  });
  return found;
}

std::vector<int64_t> segmentReshape(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int> inSymbols,
                                    std::vector<int64_t> target,
                                    llvm::ArrayRef<int> targetSymbols) {
  auto fail = [](const char *why) {
    throw Unsupported(BreakCategory::DynamicShape, std::string("reshape ") + why,
                      hint::kSpecializeSizes);
  };
  std::vector<int> a, b; // the symbols in order
  std::vector<int64_t> inSeg(1, 1), tSeg(1, 1);
  for (size_t e = 0; e < in.size(); ++e) {
    if (!ShapedType::isDynamic(in[e])) {
      inSeg.back() *= in[e];
      continue;
    }
    a.push_back(inSymbols[e]);
    inSeg.push_back(1);
  }
  int infer = -1, inferSeg = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (ShapedType::isDynamic(target[i])) {
      b.push_back(targetSymbols[i]);
      tSeg.push_back(1);
    } else if (target[i] == -1) {
      if (infer >= 0)
        throw Unsupported(BreakCategory::UserError, "reshape with two -1");
      infer = (int)i;
      inferSeg = (int)tSeg.size() - 1;
    } else if (target[i] < 0) {
      throw Unsupported(BreakCategory::UserError, "reshape: negative size");
    } else {
      tSeg.back() *= target[i];
    }
  }
  if (infer >= 0 && a.size() == b.size() + 1 && a != b) {
    // `x.view(bsz, -1, heads, d)` of a [b, s, 64]: the -1 stands for the
    // symbol between its neighbours (s), when the static sizes around it
    // match exactly.
    std::vector<int64_t> t = target;
    std::vector<int> ts(targetSymbols.begin(), targetSymbols.end());
    t[infer] = ShapedType::kDynamic;
    ts[infer] = a[inferSeg];
    return segmentReshape(in, inSymbols, t, ts);
  }
  if (a != b || std::count_if(a.begin(), a.end(), [](int s) { return s < 0; }))
    fail("that moves, merges or splits symbolic sizes (only static dims may change around them)");
  for (size_t k = 0; k < inSeg.size(); ++k) {
    if ((int)k == inferSeg) {
      if (tSeg[k] == 0 || inSeg[k] % tSeg[k])
        fail("with a -1 that does not divide its static dims");
      target[infer] = inSeg[k] / tSeg[k];
    } else if (inSeg[k] != tSeg[k]) {
      fail("changing the static sizes between symbolic ones");
    }
  }
  return target;
}

namespace {

/// Compares two types: equal, except that `dyn` may hold `?` where `stat`
/// holds a symbolic size's captured value; a static size of `dyn` must not
/// equal an input symbol's (it may stand for a symbolic size that was
/// folded). A derived symbol (an expression of input symbols) exists only
/// as SymInt expressions and `?` dims, never as a folded constant: a
/// static size equal to its value is another size (`inputOnly`).
bool sameUpToSymbols(mlir::Type dyn, mlir::Type stat, const std::map<int64_t, int> &symOf,
                     std::vector<int> *symbols, std::set<int64_t> &collide,
                     const std::set<int64_t> &inputOnly) {
  auto a = llvm::dyn_cast<mlir::RankedTensorType>(dyn);
  auto b = llvm::dyn_cast<mlir::RankedTensorType>(stat);
  if (!a || !b)
    return dyn == stat;
  if (a.getElementType() != b.getElementType() || a.getRank() != b.getRank())
    return false;
  for (int64_t d = 0; d < a.getRank(); ++d) {
    int sym = -1;
    if (a.isDynamicDim(d)) {
      auto it = symOf.find(b.getDimSize(d));
      if (it == symOf.end())
        return false;
      sym = it->second;
    } else if (a.getDimSize(d) != b.getDimSize(d)) {
      return false;
    } else if (inputOnly.count(a.getDimSize(d))) {
      collide.insert(a.getDimSize(d));
      return false;
    }
    if (symbols)
      symbols->push_back(sym);
  }
  return true;
}

/// Two kiln.slice ops that keep the same elements: along a static dim of
/// `dyn`'s operand the bounds may be written from the front or from the
/// end (a dim the static capture traced to a symbol takes the symbolic
/// path, mlir::kiln::sliceBounds); along a dynamic dim they are equal.
bool sameSlice(mlir::Operation *dyn, mlir::Operation *stat) {
  auto bounds = [](mlir::Operation *op, const char *name) {
    return op->getAttrOfType<mlir::DenseI64ArrayAttr>(name);
  };
  if (dyn->getName().getStringRef() != "kiln.slice" ||
      dyn->getAttrDictionary().size() != stat->getAttrDictionary().size() ||
      bounds(dyn, "step") != bounds(stat, "step"))
    return false;
  auto ta = llvm::cast<mlir::RankedTensorType>(dyn->getOperand(0).getType());
  auto tb = llvm::cast<mlir::RankedTensorType>(stat->getOperand(0).getType());
  auto sa = bounds(dyn, "start").asArrayRef(), ea = bounds(dyn, "end").asArrayRef();
  auto sb = bounds(stat, "start").asArrayRef(), eb = bounds(stat, "end").asArrayRef();
  for (int64_t i = 0; i < ta.getRank(); ++i) {
    if (ta.isDynamicDim(i) ? (sa[i] != sb[i] || ea[i] != eb[i])
                           : mlir::kiln::sliceBounds(sa[i], ea[i], ta.getDimSize(i)) !=
                                 mlir::kiln::sliceBounds(sb[i], eb[i], tb.getDimSize(i)))
      return false;
  }
  return true;
}

std::string typeText(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

} // namespace

bool checkAgainstStatic(Capture &dyn, const Capture &stat, std::string &why,
                        std::set<int64_t> &collide) {
  std::map<int64_t, int> symOf;
  std::set<int64_t> inputOnly;
  for (size_t i = 0; i < dyn.symbols.size(); ++i) {
    symOf[dyn.symbols[i].captured] = (int)i;
    if (!dyn.symbols[i].def)
      inputOnly.insert(dyn.symbols[i].captured);
  }
  auto fd = llvm::cast<mlir::func::FuncOp>(dyn.module->getBody()->front());
  auto fs = llvm::cast<mlir::func::FuncOp>(const_cast<Capture &>(stat).module->getBody()->front());
  llvm::DenseMap<mlir::Value, int> nd, ns;
  auto argsD = fd.getArguments(), argsS = fs.getArguments();
  if (argsD.size() != argsS.size()) {
    why = "the static capture has other inputs";
    return false;
  }
  for (size_t i = 0; i < argsD.size(); ++i) {
    if (!sameUpToSymbols(argsD[i].getType(), argsS[i].getType(), symOf, nullptr, collide,
                         inputOnly)) {
      why = "input " + std::to_string(i) + " has a static size equal to a symbolic one (" +
            typeText(argsD[i].getType()) + ")";
      return false;
    }
    nd[argsD[i]] = ns[argsS[i]] = (int)i;
  }
  std::vector<mlir::Operation *> opsD, opsS;
  fd.getBody().walk([&](mlir::Operation *op) { opsD.push_back(op); });
  fs.getBody().walk([&](mlir::Operation *op) { opsS.push_back(op); });
  if (opsD.size() != opsS.size()) {
    size_t i = 0;
    while (i < opsD.size() && i < opsS.size() && opsD[i]->getName() == opsS[i]->getName())
      ++i;
    auto name = [](const std::vector<mlir::Operation *> &ops, size_t i) {
      if (i >= ops.size())
        return std::string("the end");
      std::string s = ops[i]->getName().getStringRef().str() + " at ";
      llvm::raw_string_ostream os(s);
      ops[i]->getLoc().print(os);
      return s;
    };
    why = "the graph has other ops with static sizes (" + std::to_string(opsS.size()) +
          " ops, not " + std::to_string(opsD.size()) + "; first " + name(opsS, i) +
          " where the symbolic capture has " + name(opsD, i) + ")";
    return false;
  }
  int next = (int)argsD.size();
  for (size_t i = 0; i < opsD.size(); ++i) {
    mlir::Operation *a = opsD[i], *b = opsS[i];
    std::string where = a->getName().getStringRef().str();
    if (a->getName() != b->getName() ||
        (a->getAttrDictionary() != b->getAttrDictionary() && !sameSlice(a, b)) ||
        a->getNumOperands() != b->getNumOperands() || a->getNumResults() != b->getNumResults() ||
        a->getNumRegions() || b->getNumRegions()) {
      why = "op " + where + " depends on a symbolic size's value";
      return false;
    }
    for (unsigned k = 0; k < a->getNumOperands(); ++k) {
      auto x = nd.find(a->getOperand(k)), y = ns.find(b->getOperand(k));
      if (x == nd.end() || y == ns.end() || x->second != y->second) {
        why = "op " + where + " is wired differently with static sizes";
        return false;
      }
    }
    bool isReturn = llvm::isa<mlir::func::ReturnOp>(a);
    for (unsigned k = 0; isReturn && k < a->getNumOperands(); ++k) {
      std::vector<int> syms;
      if (!sameUpToSymbols(a->getOperand(k).getType(), b->getOperand(k).getType(), symOf, &syms,
                           collide, inputOnly)) {
        why = "result " + std::to_string(k) +
              " has a size that is neither static nor a symbolic input size";
        return false;
      }
      if (k < dyn.results.size()) {
        dyn.results[k].symbolOf = syms;
        for (size_t d = 0; d < syms.size(); ++d)
          if (syms[d] >= 0)
            dyn.results[k].sizes[d] = kSymbolicSize;
      }
    }
    for (unsigned k = 0; k < a->getNumResults(); ++k) {
      if (!sameUpToSymbols(a->getResult(k).getType(), b->getResult(k).getType(), symOf, nullptr,
                           collide, inputOnly)) {
        why = "op " + where + " has a size that depends on a symbolic size (" +
              typeText(a->getResult(k).getType()) + " vs " + typeText(b->getResult(k).getType()) +
              ")";
        return false;
      }
      nd[a->getResult(k)] = ns[b->getResult(k)] = next++;
    }
  }
  return true;
}

} // namespace kiln
