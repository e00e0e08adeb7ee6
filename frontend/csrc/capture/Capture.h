//===- Capture.h - symbolic bytecode capture into kiln IR ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Entry point of the symbolic interpreter: walks a frame's bytecode with
// abstract values (tensors become kiln IR values, Python values stay
// concrete and guarded, user functions and nn.Module.forward are inlined,
// loops over concrete iterables unrolled) and produces a kiln module, the
// guards it relies on and how to rebuild the Python result. Anything it
// does not support ends the capture with a reason and a source location.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_CAPTURE_H
#define KILN_FRONTEND_CAPTURE_CAPTURE_H

#include "../Guards.h"
#include "../TensorInfo.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace kiln {

/// How one node of the Python result is produced. The result is a tree
/// stored in prefix order: a Tuple/List node is followed by its children.
struct OutputSlot {
  enum class Kind { Graph, Input, Constant, Tuple, List, Dict, InputView };
  Kind kind;
  int index = 0;  ///< Graph: result number; Input: graph input number;
                  ///< Tuple/List/Dict: number of children (Dict: values)
  PyRef constant; ///< Constant: the object itself; Dict: tuple of its keys;
                  ///< InputView: tuple of (method name, args) applied to input `index`
  bool copy = false; ///< Graph/Input: return a clone (eager made a copy)
  PyRef cls; ///< Dict: when set, the result is cls(**dict) (a ModelOutput)
};

/// A graph input: a tensor read from a source.
struct GraphInput {
  int source;
  bool makeContiguous = false; ///< non-contiguous at capture: copied per call
  bool requiresGrad = false;
};

/// A graph result the runtime allocates.
struct GraphOutput {
  std::vector<int64_t> sizes;
  DType dtype;
};

/// The interpreter state where a capture stopped at a graph break (see
/// kiln/_resume.py): the graph's Python result is the tuple (stack items,
/// locals, cells), which the frame hook hands to the break's stub.
struct BreakState {
  bool reached = false; ///< the capture got to the stop offset
  std::string layout; ///< per stack slot: 'n' a NULL, 'i' the next item
  std::vector<std::string> locals; ///< fast locals passed after the stack items
  std::vector<std::string> cells;  ///< cells (by content) passed after the locals
  /// (item, source): items read from the frame on every call (the caller's
  /// own objects, e.g. a list passed in, keep their identity).
  std::vector<std::pair<int, int>> sourced;
  /// Items that are lists/dicts/sets made at capture time: copied per call.
  std::vector<int> copied;
  /// Items whose subtree holds graph results (the autograd recompute
  /// returns just these).
  std::vector<int> needed;
};

/// Everything a successful capture produces.
struct Capture {
  /// In: stop before the root instruction at this bytecode offset and
  /// return the interpreter state (a graph break's prefix); -1: run to the end.
  int stopOffset = -1;
  /// Out (with stopOffset): the state at the stop.
  BreakState state;
  SourceTable sources;
  std::vector<Guard> guards;
  std::vector<GraphInput> inputs;
  std::vector<GraphOutput> results;
  std::vector<OutputSlot> outputs; ///< the result tree, root first
  /// Whether grad mode was on at capture (guarded).
  bool gradMode = false;
  /// torch.get_default_dtype() at capture (guarded like grad mode).
  PyObject *defaultDtype = nullptr;
  /// Number of kiln ops in the graph.
  int numOps = 0;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Why a capture stopped.
struct CaptureFailure {
  std::string reason;
  std::string location; ///< "file:line" of the unsupported construct
  /// Offset of the root frame's instruction that was running (the call
  /// that was being inlined, for a failure inside a callee); -1 when the
  /// failure was not inside an instruction (e.g. the result).
  int rootOffset = -1;
};

/// Captures the frame of `code` (called as `func`, locals in `frame`).
/// Returns false and fills `failure` when the frame cannot be captured; the
/// caller then runs it eagerly. A Python error is never left set.
bool captureFrame(mlir::MLIRContext &ctx, PyCodeObject *code, PyObject *func,
                  const FrameView &frame, Capture &out, CaptureFailure &failure);

/// Names of the locals of `code` (for guard descriptions).
std::vector<std::string> localNames(PyCodeObject *code);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_CAPTURE_H
