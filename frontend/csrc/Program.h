//===- Program.h - compiled graphs with torch calls between them -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Per-op fallback (docs/architecture.md §3c): a captured graph holding torch
// calls kiln has no lowering for is split at those calls into compiled
// segments; the entry then runs a Program, a list of steps over a table of
// values (torch tensors): slots 0..n-1 are the graph inputs, each step reads
// some slots and writes new ones. A Graph step runs one compiled segment
// (CPU JIT or kiln.cuda runner, through runGraph); a Fallback step calls the
// saved torch callable with the live tensors and the captured constants.
// Running a program needs no MLIR (ProgramCompile.cpp builds one).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_PROGRAM_H
#define KILN_FRONTEND_PROGRAM_H

#include "TensorInfo.h"

#include "llvm/ADT/ArrayRef.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct Entry;

/// One argument of a fallback call: a captured constant, the operand-th
/// tensor operand of the call, or a tuple/list of such arguments.
struct FallbackArg {
  enum class Kind { Constant, Operand, Tuple, List };
  Kind kind = Kind::Constant;
  PyRef constant;                 ///< Constant
  int operand = -1;               ///< Operand: index into the step's inputs
  std::vector<FallbackArg> items; ///< Tuple/List
};

/// A torch call run through torch inside the compiled program.
struct FallbackCall {
  std::string name;     ///< qualified name, e.g. "torch.special.erfcx"
  std::string location; ///< "file:line" of the call
  PyRef callable;       ///< the torch function (or Tensor method descriptor)
  std::vector<FallbackArg> args;
  std::vector<std::pair<PyRef, FallbackArg>> kwargs; ///< (str key, value)
  bool tupleResult = false;                          ///< it returns a tuple (else one tensor)
  /// Expected result metadata (from the meta run at capture); checked per
  /// call, so an op whose shape turned out data-dependent fails loudly.
  std::vector<std::vector<int64_t>> sizes;
  std::vector<PyObject *> dtypes; ///< borrowed torch dtype singletons
  /// Per result: whether a later step or the entry's results read it. An
  /// unread result is not checked: meta kernels give some auxiliary results
  /// other sizes than the CPU kernels (native_batch_norm's saved statistics
  /// in eval, embedding_bag's offset2bag). Empty: check all.
  std::vector<bool> resultUsed;
  /// "name(constants)" for the compile-cache key and logs.
  std::string signature() const;
};

/// One step of a program.
struct ProgramStep {
  enum class Kind { Graph, Fallback };
  Kind kind = Kind::Graph;
  /// Graph: the compiled segment (its `inputs`/`results` describe the
  /// segment function; no guards, sources or outputs).
  std::shared_ptr<Entry> graph;
  FallbackCall call;    ///< Fallback
  std::vector<int> in;  ///< value slots read (graph inputs / call operands)
  std::vector<int> out; ///< value slots written (results, in order)
  /// Graph: per input, whether it must be made contiguous first (values a
  /// torch call produced may be strided; graph inputs follow GraphInput).
  std::vector<bool> contiguous;
};

/// The steps of one entry.
struct Program {
  std::vector<ProgramStep> steps;
  int numValues = 0;
  /// The entry's graph results, as value slots.
  std::vector<int> resultSlots;
  /// Per graph input: its dims in memory order, the graph argument's
  /// layout (GraphInput::memoryOrder; empty: the tensor as it is). Steps
  /// read such an input as its `permute(order)` view.
  std::vector<std::vector<int64_t>> inputOrders;
};

/// Runs `program` on the entry's graph inputs (borrowed); fills `results`
/// (new references, one per graph result) or returns false with a Python
/// error set.
bool runProgram(const Program &program, llvm::ArrayRef<PyObject *> inputs,
                std::vector<PyRef> &results);

/// Calls a fallback step on `operands` (borrowed) and checks its results;
/// appends them to `out` (new references). False with a Python error.
/// Counts the call (`kiln.stats()["fallback_calls"]`: proof that a fallback
/// op really ran through torch).
bool runFallback(const FallbackCall &call, llvm::ArrayRef<PyObject *> operands,
                 std::vector<PyRef> &out);

} // namespace kiln

#endif // KILN_FRONTEND_PROGRAM_H
