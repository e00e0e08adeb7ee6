//===- Entry.h - a compiled entry of a code object ----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// One cached compilation of a frame: its guards, how to gather inputs from
// the frame, the compiled function, and how to rebuild the Python result.
// Running an entry needs no MLIR: it only calls the compiled function.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_ENTRY_H
#define KILN_FRONTEND_ENTRY_H

#include "Guards.h"
#include "Program.h"
#include "capture/Capture.h"
#include "runtime/CompiledFunction.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct CompiledGrad; // hook/CompiledGrad.h

struct ResumePlan;

/// A compiled graph plus everything needed to call it from a frame.
struct Entry {
  SourceTable sources;
  std::vector<Guard> guards;
  bool gradMode = false;
  PyObject *defaultDtype = nullptr; ///< torch.get_default_dtype() at capture
  std::vector<GraphInput> inputs;
  std::vector<GraphOutput> results;
  /// Per result: the input whose memory it is computed into (its write-back
  /// only bumps the version; hook/InPlaceResults.h), or -1; empty: none.
  std::vector<int> inPlaceOf;
  /// Per result: passed without memory, allocated when the compiled code
  /// first writes it (CallResources.h); empty: none.
  std::vector<char> lazyResults;
  /// Symbolic sizes of a dynamic graph (empty: every size static). Inputs
  /// with a symbolic dim get their sizes and contiguous strides per call,
  /// results their sizes from these (GraphOutput::symbolOf).
  std::vector<SymbolicSize> symbols;
  /// Comparisons on the symbolic sizes the graph depends on (checked with
  /// the symbols, see checkSymbols).
  std::vector<SizeGuard> sizeGuards;
  std::vector<OutputSlot> outputs;
  /// Result that flags an out-of-range data index (Capture::indexCheck).
  int indexCheck = -1;
  /// Side effects replayed after the graph runs (Capture::effects).
  std::vector<SideEffect> effects;
  std::vector<OutputSlot> effectValues;
  bool needsAutograd = false;
  /// A failed capture: when its guards hold the frame runs eagerly (the
  /// capture would fail the same way); `eagerReason` says why.
  bool eager = false;
  std::string eagerReason;
  /// An eager entry whose capture stopped at the user's own Python
  /// exception (a user-error break): under fullgraph=True it still runs
  /// eagerly, so the caller gets the real
  /// exception (type, message, cause, traceback) instead of kiln's error.
  bool raisesInEager = false;
  /// A graph break's prefix: the graph returns the interpreter state and
  /// this plan runs the rest of the frame (Resume.h); null otherwise.
  std::shared_ptr<ResumePlan> resume;
  rt::CompiledFunction fn;
  /// Set instead of `fn` for graphs on CUDA/meta tensors: a Python callable
  /// (kiln.cuda) taking the graph inputs, returning the results (CudaEntry.h).
  PyRef cudaRunner;
  /// Set instead of `fn` when the graph holds torch calls kiln cannot lower
  /// (per-op fallback): compiled segments and torch calls run in order.
  std::shared_ptr<Program> program;
  /// A graph that needs gradients compiled with its backward (set instead
  /// of `fn`; null: the backward recomputes eagerly, Recompute.h).
  std::shared_ptr<CompiledGrad> grad;
  std::vector<std::string> localNames;
  std::string name;

  /// Per-entry data of the call path, built on the first run (runGraph):
  /// memref descriptor words with sizes/strides filled in (each call copies
  /// them and writes the data pointers), and one size tuple per output for
  /// torch.empty. Nothing here changes per call, so concurrent calls of one
  /// entry (the GIL is released around the compiled code) share it safely.
  struct CallPlan {
    bool ready = false;
    std::vector<int64_t> words;    ///< all descriptors, inputs then results
    std::vector<size_t> offsets;   ///< word offset of each descriptor
    std::vector<PyRef> emptySizes; ///< per result: tuple(sizes)
    std::vector<int> ranks;        ///< per descriptor (dynamic entries)
    std::vector<char> symbolic;    ///< per descriptor: has a symbolic dim
  };
  mutable CallPlan plan;
};

/// For a dynamic entry: whether the input dims of each symbolic size are
/// equal (the relations the graph relies on) and the size guards hold; -1
/// when they do, else the index of the first symbol that differs (or
/// symbols.size() + the index of the failing size guard). `inputs` as for
/// runGraph.
int checkSymbols(const Entry &entry, llvm::ArrayRef<PyObject *> inputs);

/// A number argument's value as the 8 bytes the graph reads: an int64, or a
/// float's double. False with a Python error (an int outside int64).
bool numberBits(PyObject *number, int64_t &bits);

/// The value of every symbolic size of `entry` for this call: an input
/// dim's read from its first input, a derived one's evaluated from the
/// earlier ones. False when one cannot be read (the caller treats it as a
/// failed guard).
bool symbolValues(const Entry &entry, llvm::ArrayRef<PyObject *> inputs,
                  llvm::SmallVectorImpl<int64_t> &values);

/// Words describing symbol `i` of `entry` (a size guard for i >=
/// symbols.size()) for guard and recompile logs, e.g.
/// "L['x'].size(0) == L['y'].size(1) (symbolic, >= 2)", "(s0 > 1) is True".
std::string describeSymbol(const Entry &entry, size_t i);

/// Runs the graph on `inputs` (tensors, borrowed, in graph-input order);
/// returns the graph results as new references, or false with a Python
/// error set (eager's IndexError when the graph's index check flagged an
/// out-of-range index, Entry::indexCheck). `owned`, when not empty, has one
/// slot per input: an input held there (its only reference: the caller
/// handed it over) is dropped where the compiled code says it is done with
/// it (a backward's saved activations, runtime/cpu/CallHooks.h), the rest
/// when the caller drops the slots.
bool runGraph(const Entry &entry, llvm::ArrayRef<PyObject *> inputs, std::vector<PyRef> &results,
              llvm::MutableArrayRef<PyRef> owned = {});

/// Rebuilds the Python return value from graph results, inputs and the
/// entry's sources resolved for this call (`values`: an object of the
/// caller's that is returned is the call's own). New reference.
PyObject *assembleResult(const Entry &entry, const std::vector<PyRef> &results,
                         llvm::ArrayRef<PyObject *> inputs, const std::vector<PyRef> &values);

/// The graph inputs of one call (borrowed) from the entry's resolved
/// sources `values`. With `perCall` (a run), the inputs kiln makes per
/// call are made, owned by `made`: a random graph's seed, a fresh 0-d int64
/// tensor drawn from torch's default generator (kiln._random.draw_seed;
/// advances it); without (size checks only), the seed is None. An int or
/// float argument's inputs (its carrier and value, GraphInput) are the
/// Python number itself, which runGraph reads directly, except in a run
/// of an entry that needs autograd (its Python code takes tensors): then
/// an `(n, 0)` carrier and a 0-d tensor holding the value. False with a
/// Python error set.
bool gatherInputs(const Entry &entry, const std::vector<PyRef> &values, bool perCall,
                  llvm::SmallVectorImpl<PyObject *> &inputs, std::vector<PyRef> &made);

/// Whether an input the entry writes back into (a CopyInto effect) shares
/// storage with another input in this call (`values`: the entry's
/// resolved sources): -1 when none does, else the other input's index.
int checkWriteBackAliasing(const Entry &entry, const std::vector<PyRef> &values);

/// Replays the entry's side effects in order on the objects resolved for
/// this call (`values`: the entry's sources); false with a Python error set.
bool replaySideEffects(const Entry &entry, const std::vector<PyRef> &results,
                       llvm::ArrayRef<PyObject *> inputs, const std::vector<PyRef> &values);

} // namespace kiln

#endif // KILN_FRONTEND_ENTRY_H
