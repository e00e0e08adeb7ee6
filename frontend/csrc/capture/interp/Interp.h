//===- Interp.h - the symbolic interpreter's internals ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to frontend/csrc/capture: decoded bytecode, interpreter frames
// and the Interpreter class (abstract values: values/Value.h). Its bytecode
// loop is InstructionLoop.cpp, running one handler per opcode from the
// opcode table (Opcodes.def, OpcodeHandlers.h; handlers in LoadStore.cpp,
// Containers.cpp, Operators.cpp, ControlFlow.cpp and Calls.cpp); reads from
// the frame and guards are in Interpreter.cpp; torch-op handlers are in
// capture/ops (TorchOps.cpp and its family files).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_H
#define KILN_FRONTEND_CAPTURE_INTERP_H

#include "capture/Capture.h"
#include "capture/breaks/GraphBreak.h"
#include "capture/interp/Frame.h"
#include "capture/interp/Opcodes.h"
#include "capture/values/Value.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

namespace kiln {

struct Args;

/// Evaluates Python binary operator `op` ("+", "<", "+=" ...) on two
/// constants: a new reference, or null with a Python error set; throws
/// Unsupported for an unknown operator (Operators.cpp).
PyObject *constBinary(const std::string &op, PyObject *a, PyObject *b);
/// Interpreter::tensorAttribute's name for len(t) (no Python attribute).
inline constexpr const char *kTensorLenQuery = " len";
/// The symbolic interpreter.
class Interpreter {
  /// The instruction handlers of the opcode table are its semantics.
  friend struct OpcodeHandlers;
  friend struct NumpyInterop;     // interp/NumpyInterop.h
  friend struct CaptureTimeCalls; // interp/CaptureTimeCalls.h
public:
  Interpreter(mlir::MLIRContext &ctx, const FrameView &frame, Capture &out);
  ~Interpreter();
  /// The values the side effects store, parallel to Capture::effects.
  const std::vector<VarP> &effectValues() const { return effectValues_; }

  /// Interprets the root frame of `code`; returns the Python result.
  VarP runRoot(PyCodeObject *code, PyObject *func);

  // --- used by TorchOps.cpp ---
  mlir::OpBuilder &builder() { return b_; }
  mlir::Location loc() const { return loc_; }
  VarP callTorchFunction(PyObject *callee, std::vector<VarP> &args, // a mapped one, else nullptr
                         std::map<std::string, VarP> &kwargs);
  /// A mapped torch function called with a Python number first and a
  /// tensor among its arguments (`torch.eq(2.5, t)`) is tried once on meta
  /// tensors; a TypeError there (eager's argument parsing) is a user-error
  /// break, so eager raises it (TorchCalls.cpp).
  void checkScalarInputAccepted(PyObject *callee, const std::vector<VarP> &args,
                                const std::map<std::string, VarP> &kwargs);
  VarP callTensorMethod(const VarP &self, const std::string &name, std::vector<VarP> &args,
                        std::map<std::string, VarP> &kwargs); ///< tensor method `name`
  /// A tensor attribute (`x.shape`, `x.T` ...).
  VarP tensorAttribute(const VarP &self, const std::string &name);
  /// `x.shape` of a graph tensor: a torch.Size (with SymInts for `?` dims).
  VarP tensorShape(const VarP &self);
  /// `x.requires_grad`: an input's guarded flag; for a computed tensor,
  /// eager's rule (grad mode on and a float path from an input needing it).
  VarP tensorRequiresGrad(const VarP &self);
  /// `x.grad` of an input, read through its source (guarded); a break for
  /// a computed tensor.
  VarP tensorGrad(const VarP &self);
  /// `x.name`, a Tensor method the op registry knows (else a break).
  VarP tensorMethod(const VarP &self, const std::string &name);
  // --- in-place updates (ops/InPlace.cpp) ---
  /// Makes `result` the new value of tensor `target`, as the in-place op
  /// `what` ("Tensor.add_", "+=") does in eager: a tensor the graph computed
  /// is rebound; the caller's tensor (a graph input aliasing no other input)
  /// is rebound and copied back into the caller's storage after the graph;
  /// views (and tensors with live views) are written through (ViewWrites.cpp).
  /// `except`: a view of `target` the update is made through (it receives
  /// the new value). `viewsRebuilt`: ViewWrites.cpp rebuilds the views.
  /// `bumps`: how many times eager advances the tensor's version counter
  /// (0 for a kernel writing through its data pointer: BatchNorm's stats).
  VarP assignInPlace(const VarP &target, mlir::Value result, const std::string &what,
                     const Var *except = nullptr, int bumps = 1, bool viewsRebuilt = false);
  /// In-place Tensor methods that are not an op's `name_` form:
  /// `copy_(src)`, `fill_(value)`, `zero_()`; nullptr for other names.
  VarP callInPlaceMethod(const VarP &self, const std::string &name, std::vector<VarP> &args,
                         std::map<std::string, VarP> &kwargs);
  /// `x[index] = value` on tensor `x` (ops/TensorSetItem.cpp): the new
  /// tensor computed, then assignInPlace; Unsupported for indices it cannot
  /// express.
  VarP tensorSetItem(const VarP &x, const VarP &index, const VarP &value);
  /// Splits `out=` off a torch call's keywords: the tensor it names
  /// (nullptr when there is none or it is None).
  static VarP takeOutArgument(std::map<std::string, VarP> &kwargs);
  /// After the capture: -1 when no graph input updated in place shares
  /// storage with another input (inputs read after the update included),
  /// else the root offset of the update (where the graph must break).
  int checkWriteBacks();
  /// `torch.tensor(python numbers, dtype=, device=)`: a constant; with 0-d
  /// graph tensors among the numbers, their stack (tensorOfGraphValues).
  VarP tensorFromData(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// torch.tensor of nested lists/tuples of numbers and 0-d graph tensors
  /// (`dtype`, else torch's inference): the values cast, concatenated and
  /// reshaped (also a list built in the frame holding only numbers);
  /// nullptr when `data` is not such a nesting.
  VarP tensorOfGraphValues(const VarP &data, std::optional<DType> dtype);
  /// A predicate method of a tensor answered from its static type
  /// (`x.is_floating_point()`); nullptr when `name` is not one.
  VarP tensorQuery(const VarP &self, const std::string &name, const std::vector<VarP> &args,
                   const std::map<std::string, VarP> &kwargs);
  /// `self.stride([dim])`, `self.is_contiguous([memory_format])`: eager's
  /// answer for a graph input (guarded) or a view of one (replayed on a meta
  /// tensor); nullptr for others (their layout is the compiled code's).
  VarP tensorLayout(const VarP &self, const std::string &name, const std::vector<VarP> &args,
                    const std::map<std::string, VarP> &kwargs);
  /// Eager's layout of an input (view): (sizes, strides, view steps), or null.
  PyRef layoutRecipe(const VarP &self);
  /// Size `dim` of tensor `v` as a Python int var: a Const, or a SymInt.
  VarP sizeVar(mlir::Value v, int64_t dim);
  // --- symbolic sizes (SymbolicSizes.cpp) ---
  /// The symbol (index into Capture::symbols) that dim `d` of `v` equals,
  /// -1 for a size that is not symbolic, -2 for a `?` dim whose origin is
  /// not tracked. Follows the ops that built `v` back to a graph input.
  int symbolOfDim(mlir::Value v, int64_t d);
  /// `a op b` when either is a SymInt: arithmetic (+ - * // %) gives a
  /// SymInt, a comparison a guarded bool; nullptr when neither is one;
  /// Unsupported for other operators and operands.
  VarP symIntBinary(const std::string &op, const VarP &a, const VarP &b);
  /// Truth value of SymInt `v`, guarded.
  bool symIntTruthy(const VarP &v);
  /// A 1-D bool tensor of `n` true values, `n` a symbolic size that is one
  /// symbol (Unsupported for an expression).
  mlir::Value symTrueLine(const VarP &n);
  /// torch.arange(n) as i64, `n` a symbolic size (one symbol).
  mlir::Value symIota(const VarP &n);
  /// `fill` (a 0-d tensor) broadcast to `dims` (Consts and SymInts).
  mlir::Value symFull(const std::vector<VarP> &dims, mlir::Value fill);
  /// An int (float) argument dynamic=None made dynamic, read as a SymInt over
  /// its carrier (a Scalar over its value input); nullptr: a guarded constant.
  VarP dynamicNumberRead(PyObject *value, int source);
  /// Whether `v` is an int argument's carrier input (DynamicNumbers.cpp).
  bool isIntCarrier(mlir::Value v);
  /// Symbol `sym`'s value as a 0-d i64 graph value: an int argument's value
  /// input (made on first use), else the sum over its line (symTrueLine).
  mlir::Value symbolValue(int sym);
  /// A `kiln.random` of `distribution` ("uniform", "normal", "integer" in
  /// `bounds` = [low, high)) filling `type` (dynamic dims from `like`): reads
  /// the per-call seed input (made on first use) and takes the next random
  /// stream (offset k * 2^40), which kiln/_random.py replays (RandomOps.cpp).
  mlir::Value random(llvm::StringRef distribution, mlir::RankedTensorType type,
                     mlir::Value like = {},
                     std::optional<std::pair<int64_t, int64_t>> bounds = std::nullopt);
  /// `x[index]` where `x` has symbolic dims or `index` a SymSlice
  /// (SymbolicIndexing.cpp); nullptr when neither.
  VarP symbolicGetitem(const VarP &x, const VarP &index);
  /// `x.expand(*size)` where `x` has symbolic dims or `size` a SymInt
  /// (SymbolicIndexing.cpp); nullptr when neither.
  VarP symbolicExpand(const VarP &x, const VarP &size);
  /// Records the guard `lhs cmp rhs` == `expected` (once).
  void addSizeGuard(SizeExprP lhs, const std::string &cmp, SizeExprP rhs, bool expected);
  // --- Python numbers read from tensors (ops/Scalars.cpp) ---
  /// `t.item()` (`type` null: the Python type of t's dtype) or int/float/bool
  /// of one-element tensor `t`, as a Scalar Var.
  VarP scalarOfTensor(const VarP &t, PyObject *type);
  /// Records that the capture reads a Python number from a tensor (`what`),
  /// or throws Unsupported under Capture::scalarsAsBreaks.
  void noteScalars(const char *what);
  /// Tensor methods `item` and `tolist` (a list of Scalars for a small
  /// static shape); nullptr for other names.
  VarP scalarMethod(const VarP &self, const std::string &name, const std::vector<VarP> &args,
                    const std::map<std::string, VarP> &kwargs);
  /// `a op b` with a Scalar operand and no tensor one: a Scalar with Python's
  /// result type; nullptr when neither is a Scalar or one is a tensor;
  /// Unsupported where the result could differ from Python's (a divisor
  /// that could be 0, `//`, `%`, `**`, other operands).
  VarP scalarBinary(const std::string &op, const VarP &a, const VarP &b);
  /// `-v` / `~v` of a Scalar.
  VarP scalarUnary(const VarP &v, bool negative);
  /// A binary operator (`+`, `@`, `<` ...) on tensors and/or scalars;
  /// nullptr when neither side is a tensor.
  VarP tensorBinary(const std::string &op, const VarP &a, const VarP &b);
  /// Records that the graph depends on the exact value of `v` (no-op for
  /// values without a source; they derive from guarded values). An
  /// nn.Module is guarded by type (guardModule).
  void guardValue(const VarP &v);
  /// Guards module `v` (read through its source) by its exact type, so
  /// instances with the same structure share the entry; finishModuleGuards
  /// turns it into a weak identity guard when the capture pinned identity
  /// (ModuleGuards.cpp).
  void guardModule(const VarP &v);
  /// The capture used a module in a way its sources do not replay (`why`):
  /// its module guards become identity guards.
  void pinModuleIdentity(const char *why);
  /// Pins identity when builtin `builtin` is evaluated at capture on a
  /// module among `args` (other than the type queries).
  void pinModulesIn(const std::vector<VarP> &args, const std::string &builtin);
  /// At the end of a capture (`captured`: it succeeded): the module guards
  /// stay type guards unless something pinned identity (then, and for a
  /// failed capture, they become weak identity guards).
  void finishModuleGuards(bool captured);
  /// len() of a Sequential/ModuleList/ModuleDict read through a source:
  /// the length of its `_modules`, guarded; nullptr for other values.
  VarP moduleContainerLen(const VarP &v);
  /// `v[index]` of a ModuleList/Sequential/ModuleDict read through a
  /// source, where eager's answer is module `child`: that child read from
  /// `_modules` through a source; nullptr when it cannot be.
  VarP moduleContainerItem(const VarP &v, PyObject *index, PyObject *child);
  /// The source of `_modules` of container module `v` whose class method
  /// `slot` (0: __len__, 1: __getitem__) is torch's own (guarded), with the
  /// dict in `modules`; -1 when `v` is not such a container.
  int containerModulesSource(const VarP &v, int slot, PyObject **modules);
  /// Offset of the root instruction running now (-1 outside the loop).
  int rootOffset() const { return rootOffset_; }
  /// Whether `v` holds (is, or contains) an exception raised at capture:
  /// such values never leave the graph (Exceptions.cpp).
  bool holdsMadeException(const VarP &v, int depth = 0) const;
  /// Per-op fallback (Fallback.cpp): when `fn` is a torch function (or, with
  /// `method` set, the Tensor method of that name, `args[0]` its receiver)
  /// kiln cannot lower, records a call that runs through torch inside the
  /// graph and returns its result. nullptr when `fn` is no torch function;
  /// throws Unsupported (with `original`'s reason first, if given) when the
  /// call cannot run that way (random, mutating, data-dependent ...).
  VarP torchFallback(PyObject *fn, const std::string &method, std::vector<VarP> &args,
                     std::map<std::string, VarP> &kwargs, const Unsupported *original);
  /// Whether `fn` is a function of torch's op namespaces (torch, torch.nn.
  /// functional, torch.special/fft/linalg, torch.functional).
  static bool isTorchOpFunction(PyObject *fn);
  /// Runs `attempt` (a call kiln maps or inlines); when it throws
  /// Unsupported, falls back to torch for the whole call (torchFallback).
  VarP withFallback(PyObject *fn, const std::string &method, std::vector<VarP> &args,
                    std::map<std::string, VarP> &kwargs, const std::function<VarP()> &attempt);
  /// Throws Unsupported when a grad-mode with-block makes results'
  /// requires_grad differ from the entry's single rule (Capture.cpp).
  void checkGradRegions() const;
  /// --- gradients of a graph that needs them (values/GradFlow.cpp) ---
  /// Marks `v` as computed without gradients whatever its operands (a
  /// BatchNorm running-stat update, done by eager's kernel under no grad).
  void markNoGrad(mlir::Value v) { noGrad_.insert(v.getAsOpaquePointer()); }
  /// Eager makes `r` with the strides of `from` (`exact`: an in-place update) or in
  /// the memory format `from` suggests (KeepsMemoryFormat ops, pad; EagerLayouts.h).
  void keepsLayout(mlir::Value r, mlir::Value from, bool exact) { layoutOf_[r] = {from, exact}; }
  const LayoutSources &layoutSources() const { return layoutOf_; }
  /// Records the grad mode from here on (after the last op emitted).
  void noteGradMode();
  /// The graph values eager computes with requires_grad: float results of
  /// ops run in grad mode with an operand that has it (inputs: their
  /// requires_grad), except those markNoGrad named.
  llvm::DenseSet<mlir::Value> gradValues() const;
  /// For a graph that needs gradients: throws Unsupported (setting
  /// `offset` to the mutation's root instruction) unless every side
  /// effect can be undone and redone around the backward's eager
  /// recompute (kiln._autograd.restoring) and stores no value that needs
  /// gradients.
  void checkAutogradEffects(const llvm::DenseSet<mlir::Value> &grad, int &offset) const;
  /// Applies mapped op `op` when one of its tensor arguments is batched by
  /// an enclosing torch.vmap: elementwise ops, casts, `new_*` factories and
  /// integer-tensor indexing run on the broadcast layout; anything else
  /// throws Unsupported. nullptr when no argument is batched (Vmap.cpp).
  VarP vmapApply(const std::string &op, Args &a);
  /// Guards the entry state (autocast, functorch level, torch function and
  /// dispatch modes); refuses the capture where kiln cannot (GlobalState.cpp).
  void guardEntryState();
  /// Guards torch.get_num_threads(): CPU code is compiled serial at one
  /// thread and with parallel loops above (CpuCompileOptions::parallelLoops).
  void guardThreadCount();

private:
  // --- side effects (SideEffects.cpp) ---
  /// Appends `e` (its target, key and kind set) storing `value` to the log.
  void recordEffect(SideEffect e, const VarP &value);
  /// `obj.name = value` on an object of the caller.
  void storeAttr(const VarP &obj, PyObject *name, const VarP &value);
  /// `global name; name = value`.
  void storeGlobal(Frame &f, PyObject *name, const VarP &value);
  /// `c[key] = value` on a dict or list: one built in the frame, or one of
  /// the caller (logged, and its Var updated).
  void storeItem(const VarP &c, const VarP &key, const VarP &value);
  /// list.append/extend/insert (`name`) on list Var `list` (logged when the
  /// list is the caller's).
  VarP listMutation(const VarP &list, const std::string &name, std::vector<VarP> &args,
                    std::map<std::string, VarP> &kwargs);
  /// `list.pop([i])` on list Var `list` (logged when it is the caller's).
  VarP listPop(const VarP &list, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// The unbound list.append/extend/insert called on a list constant of
  /// the caller: listMutation on its Var; nullptr when `fn` is not one.
  VarP callListMutation(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// Turns `c`, a list or dict constant read from the caller, into a
  /// List/Dict Var in place (every holder sees it) whose items are read
  /// through their own sources; later reads of its source return it.
  const VarP &containerVar(const VarP &c);
  /// Marks container Var `c` (with a source) mutated: later loads of its
  /// source return it.
  void trackContainer(const VarP &c);
  /// The value an attribute store / global store in this capture left
  /// (read back without a guard); nullptr when none did.
  VarP overlayAttr(const VarP &obj, const std::string &name);
  VarP overlayGlobal(Frame &f, PyObject *name);

  // --- lazy values (LazyValues.cpp) ---
  /// A Lazy Var for `value` read from `source` (an exact int, float, str,
  /// bool or list); nullptr for other values.
  VarP lazyRead(PyObject *value, int source);
  /// Turns Lazy `v` into what an eager read gives, in place (every holder
  /// sees it): a guarded Const, or for a list what fromSource returns, with
  /// its pending mutations applied. No-op for other Vars.
  void materialize(const VarP &v);
  /// materialize on `v` and everything it holds (items, self).
  void materializeDeep(const VarP &v);
  /// Before instruction `in` runs in `f`: materializes the Lazy values it
  /// consumes (its opcode's LazyOperands, Opcodes.def), except where the
  /// value may stay lazy (stored by a side effect, arithmetic with + - *, a
  /// list's own append/extend/insert/pop).
  void materializeOperands(Frame &f, const Instr &in);
  /// `lhs sym rhs` as a Lazy expression when one side is a Lazy scalar and
  /// the other a Lazy scalar or an int/float/str/bool constant and `sym`
  /// is + - * (or +=, -=, *=); nullptr otherwise.
  VarP lazyBinary(const std::string &sym, const VarP &lhs, const VarP &rhs);
  /// Whether some Lazy Var may still be alive (prunes the registry).
  bool anyLazy();
  /// list.append/extend/insert/pop on a lazy list: recorded without reading
  /// the list (LazyValues.cpp).
  VarP lazyListMutation(const VarP &list, const std::string &name, std::vector<VarP> &args,
                        std::map<std::string, VarP> &kwargs);

  /// Answers a query of torch's global state (`torch.is_autocast_enabled()`,
  /// `torch.is_grad_enabled()`, `torch._C._is_tracing()` ...) as a constant
  /// with a Call guard; nullptr when `fn` is not one (GlobalState.cpp).
  VarP callStateQuery(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// A listed logging call, replayed after the graph, or nullptr (LoggingCalls.cpp).
  VarP callReorderableLogging(PyObject *fn, const VarP &self, std::vector<VarP> &args,
                              std::map<std::string, VarP> &kwargs);
  /// Adds the guard `fn(*args) == result` (once).
  void addCallGuard(PyObject *fn, PyObject *args, PyObject *result);
  /// A context manager made in the frame that the capture can enter
  /// (grad mode, the transparent ones): made now; nullptr for other
  /// callables (ContextManagers.cpp).
  VarP constructContext(PyObject *cls, std::vector<VarP> &args,
                        std::map<std::string, VarP> &kwargs);
  /// torch.set_grad_enabled(mode) / torch._C._set_grad_enabled(mode)
  /// (`fn`): switches grad mode (recordGradSwitch) and returns the context
  /// object's stand-in (None for the latter); nullptr for other callables.
  VarP setGradEnabled(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// Sets the capture's grad mode to `mode` and logs the switch as a side
  /// effect (torch._C._set_grad_enabled(mode) after the graph).
  void recordGradSwitch(bool mode);
  /// BEFORE_WITH on `ctx`: pushes the exit callable and `__enter__`'s
  /// result, or throws Unsupported (ContextManagers.cpp).
  void enterWith(Frame &f, const VarP &ctx);
  /// A call of kiln._decompositions.vmap_call (what torch.vmap's
  /// decomposition returns calls): `func` run once on batched values;
  /// nullptr when `fn` is not that marker (Vmap.cpp).
  VarP callVmap(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// Physical copy of batched `v` with its batch dims aligned to `levels`
  /// (size-1 dims inserted after its own), marked batched at `levels`.
  VarP vmapAlign(const VarP &v, int levels);
  /// Runs frame `f` to its return (InstructionLoop.cpp).
  VarP interpret(Frame &f);
  // --- exceptions (Exceptions.cpp) ---
  /// `e` raised by the instruction at `pc` of `f`: when an exception-table
  /// entry of `f` covers it, unwinds the stack to the entry's depth, pushes
  /// (lasti and) the exception, moves `pc` to the handler and returns true.
  bool catchRaised(Frame &f, size_t &pc, const PyRaised &e);
  /// `cls(*args, **kwargs)` of an exception class whose construction is
  /// BaseException's own (built-in classes, Python subclasses adding no
  /// __new__/__init__), on constants: built at capture; nullptr otherwise.
  VarP constructException(PyObject *cls, std::vector<VarP> &args,
                          std::map<std::string, VarP> &kwargs);

  /// The root frame's state before the instruction at Capture::stopOffset,
  /// as a tuple Var; fills Capture::state (BreakState.cpp).
  VarP breakState(Frame &f);
  /// Runs the instruction at `pc` of `f` through its opcode table handler
  /// and advances `pc`; true when the frame returned (`result`).
  bool step(Frame &f, size_t &pc, VarP &result);
  /// Calls `callee` (Calls.cpp).
  VarP call(const VarP &callee, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// keys()/values()/items()/get()/pop()/to_tuple() of a Dict Var.
  VarP callDictMethod(const VarP &callee, std::vector<VarP> &args,
                      std::map<std::string, VarP> &kwargs);
  /// A BoundMethod callee: nn.Module.__call__ from super(), the module tree
  /// walks, or a Python method inlined with its receiver.
  VarP callBoundMethod(const VarP &callee, std::vector<VarP> &args,
                       std::map<std::string, VarP> &kwargs);
  /// A call of nn.Module `module` (`callee`'s object): its own __call__ or
  /// forward inlined, after guarding that no hooks are registered.
  VarP callModule(const VarP &callee, PyObject *module, std::vector<VarP> &args,
                  std::map<std::string, VarP> &kwargs);
  /// Throws Unsupported when `module` or nn.Module has hooks; guards that
  /// their hook dicts stay empty.
  void guardNoModuleHooks(const VarP &callee, PyObject *module);
  /// A call of Python function `fn` (`callee`'s object): inlined (through
  /// a kiln.compile wrapper to the function it wraps).
  VarP callPythonFunction(const VarP &callee, PyObject *fn, std::vector<VarP> &args,
                          std::map<std::string, VarP> &kwargs);
  VarP inlineFunction(PyObject *fn, int fnSource, std::vector<VarP> &args,
                      std::map<std::string, VarP> &kwargs,
                      const std::vector<VarP> *closure = nullptr, const Var *made = nullptr);
  /// Binds the free variables of `code` in `f`: from `closure` (symbolic
  /// cells) or from the real cells of `fn`, read through `fnSource`.
  void bindFreeVars(Frame &f, PyCodeObject *code, PyObject *fn, int fnSource,
                    const std::vector<VarP> *closure);
  VarP cellContent(const VarP &cell, const std::string &name);
  /// A ModelOutput (transformers) instance built from `cls(*args, **kwargs)`
  /// as a record (a Dict Var with `obj` = cls); nullptr when `cls` is not
  /// a ModelOutput dataclass (Records.cpp).
  VarP buildRecord(PyObject *cls, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  // --- user-defined objects (values/UserObjects.cpp) ---
  /// `cls(*args, **kwargs)` of a plain Python class (`callee` the class's
  /// Var): object.__new__ or a pure-Python __new__, then a Python __init__
  /// inlined on the new Object Var; nullptr when `cls` is not a class the
  /// capture builds; Unsupported (a category) for classes whose
  /// construction is not pure Python (C __new__, metaclass __call__ ...).
  VarP constructObject(const VarP &callee, PyObject *cls, std::vector<VarP> &args,
                       std::map<std::string, VarP> &kwargs);
  /// object.__new__(cls), tuple.__new__(cls, items), object.__setattr__ /
  /// object.__getattribute__ and type(obj) called on the capture's objects;
  /// nullptr for other callables.
  VarP callObjectSlot(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// `obj.name` of an Object Var (or of a namedtuple Tuple Var) in
  /// object.__getattribute__'s order: a data descriptor of the class
  /// (property getter inlined, slot), the instance attributes, another
  /// class attribute (methods bound to `obj`, classmethods to its class),
  /// then a Python __getattr__; with `missingOk`, nullptr when it is absent.
  VarP objectAttr(const VarP &obj, PyObject *name, bool missingOk = false);
  /// `obj.name = value` on an Object Var: a Python __setattr__ or property
  /// setter inlined, else the attribute (or slot) set.
  void storeObjectAttr(const VarP &obj, PyObject *name, const VarP &value, bool viaObject = false);
  /// bool(obj) of an Object Var: its class's Python __bool__, else __len__
  /// != 0 (inlined, CaptureTimeCalls.cpp), else true.
  bool objectTruthy(const VarP &obj);
  /// Calls an Object Var (its class's Python __call__ inlined).
  VarP callObject(const VarP &obj, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// The class attribute `descr` (found on `cls` as `name`) of an object
  /// `obj` (a Var whose class is `cls`, `clsVar` the class's Var) bound as
  /// Python does: functions to `obj`, classmethods to the class,
  /// staticmethods and plain values as they are.
  VarP bindClassAttr(const VarP &obj, const VarP &clsVar, PyObject *name, PyObject *descr);
  /// `rec.attr` of a record: a field (None if unset) or a dict method.
  VarP recordAttr(const VarP &rec, const std::string &attr);
  /// `rec[index]`: by key (str) or into to_tuple() (int, slice).
  VarP recordItem(const VarP &rec, PyObject *index);
  /// An unbound method of dict/str/tuple/list called on a value (`d.get(k)`
  /// kept as CPython's [function, self]): evaluated when it only reads;
  /// nullptr when `fn` is not one (Records.cpp).
  VarP callPureMethod(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// `module.modules()` / `named_modules()` / `children()` /
  /// `named_children()` evaluated at capture: the structure is guarded
  /// (each visited module's children by identity, their count by length).
  /// nn.Module.parameters/named_parameters/buffers/named_buffers(...)
  /// answered at capture: each tensor read (as a graph input) through its
  /// module's _parameters/_buffers dict, the tree and those dicts guarded.
  VarP moduleMembers(const VarP &module, const std::string &method, std::vector<VarP> &args,
                     std::map<std::string, VarP> &kwargs);
  VarP moduleTree(const VarP &module, const std::string &method, std::vector<VarP> &args,
                  std::map<std::string, VarP> &kwargs);
  /// `super()` with no arguments in frame `f`: super(__class__, first
  /// argument), remembered so its methods bind to the receiver's Var.
  VarP zeroArgSuper(Frame &f);
  /// Builtins that ask about a value rather than compute with it
  /// (`callable(f)`) answered for abstract values too; nullptr when `fn`
  /// (named `name`) is not one (PythonBuiltins.cpp).
  VarP callIntrospection(PyObject *fn, const std::string &name, std::vector<VarP> &args,
                         std::map<std::string, VarP> &kwargs);
  /// Pure library functions of Python values evaluated at capture on the
  /// objects the capture resolved (`inspect.signature(f)`); nullptr for
  /// others (PythonBuiltins.cpp).
  VarP callAtCapture(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// A call of a Python builtin (or `math`/torch.device/finfo/iinfo):
  /// answered for abstract values by a handler per builtin, evaluated on
  /// constants otherwise; a break for builtins that are not pure
  /// (PythonBuiltins.cpp).
  VarP callBuiltin(PyObject *callee, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// A builtin's handler for abstract arguments: nullptr when the builtin
  /// is to be evaluated on constant arguments instead.
  using BuiltinHandler = VarP (Interpreter::*)(const std::string &name, std::vector<VarP> &args,
                                               std::map<std::string, VarP> &kwargs);
  /// getattr/hasattr through a guarded source (a missing attribute is
  /// guarded by HasAttr).
  VarP builtinGetattr(const std::string &name, std::vector<VarP> &args,
                      std::map<std::string, VarP> &kwargs);
  /// sum() over tensors as a chain of `+`.
  VarP builtinSum(const std::string &name, std::vector<VarP> &args,
                  std::map<std::string, VarP> &kwargs);
  /// int/float/bool/abs/type of a tensor or a Scalar (ops/Scalars.cpp):
  /// a Scalar (bool(t) is `t != 0`, int of a float breaks: eager's
  /// conversion of nan/inf and rounding are not reproduced).
  VarP builtinScalar(const std::string &name, std::vector<VarP> &args,
                     std::map<std::string, VarP> &kwargs);
  /// len() of a tensor (static shape), of a frame container (guarded) or
  /// of a container built here.
  VarP builtinLen(const std::string &name, std::vector<VarP> &args,
                  std::map<std::string, VarP> &kwargs);
  /// isinstance() of a tensor or of a container built here.
  VarP builtinIsinstance(const std::string &name, std::vector<VarP> &args,
                         std::map<std::string, VarP> &kwargs);
  /// tuple()/list() of an abstract iterable.
  VarP builtinSequence(const std::string &name, std::vector<VarP> &args,
                       std::map<std::string, VarP> &kwargs);
  /// The builtin `fn` called on the constants the arguments hold (items of
  /// containers built here converted); an iterator result becomes an Iter.
  VarP callOnConstants(PyObject *fn, const std::string &name, std::vector<VarP> &args,
                       std::map<std::string, VarP> &kwargs);
  // --- the iteration protocol (Iterators.cpp) ---
  /// The next item of Iter `it`, or nullptr when it is exhausted.
  VarP iterNext(const VarP &it);
  /// An Iter whose items come from `produce` (nullptr: exhausted).
  static VarP makeLazyIter(std::function<VarP()> produce);
  /// A generator function's frame `f` (arguments bound) as an Iter that
  /// runs it to its next yield on each request.
  VarP generatorIter(Frame &&f);
  /// iter/next/zip/map/filter/enumerate/reversed, the itertools iterators,
  /// set/frozenset, dict/OrderedDict/defaultdict: nullptr when `fn` is not one.
  VarP callIterationBuiltin(PyObject *fn, std::vector<VarP> &args,
                            std::map<std::string, VarP> &kwargs);
  // --- functools, operator, key functions, user-object operators (Functional.cpp) ---
  /// functools.partial/reduce/lru_cache wrappers, the `operator` module,
  /// sorted/min/max with a key, itertools.combinations/permutations:
  /// nullptr when `fn` is none of them (or is left to the constant path).
  VarP callFunctional(const VarP &callee, PyObject *fn, std::vector<VarP> &args,
                      std::map<std::string, VarP> &kwargs);
  /// operator.add/mul/getitem/... as the operator opcodes.
  VarP callOperatorModule(PyObject *fn, std::vector<VarP> &args,
                          std::map<std::string, VarP> &kwargs);
  /// functools.reduce(f, iterable[, initial]): a left fold of calls.
  VarP functoolsReduce(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// functools.partial of constants, built at capture.
  VarP makePartial(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// A call of a functools.partial object: its function with the merged arguments.
  VarP callPartial(const VarP &callee, std::vector<VarP> &args,
                   std::map<std::string, VarP> &kwargs);
  /// A call of a functools.lru_cache wrapper: the wrapped function inlined
  /// (a break when it has side effects).
  VarP callLruCached(const VarP &callee, PyObject *wrapper, std::vector<VarP> &args,
                     std::map<std::string, VarP> &kwargs);
  /// sorted/min/max (`name`) with key=: the key called on each item.
  VarP callWithKey(const std::string &name, std::vector<VarP> &args,
                   std::map<std::string, VarP> &kwargs);
  /// itertools.combinations/permutations over the items.
  VarP itertoolsCombinatoric(bool permutations, std::vector<VarP> &args,
                             std::map<std::string, VarP> &kwargs);
  /// Binary operator `sym` where an operand is a user object: its class's
  /// Python dunder methods in Python's order; nullptr when neither is one.
  VarP objectOperator(const std::string &sym, const VarP &lhs, const VarP &rhs);
  /// `self.<name>(other)` when `self`'s class defines `name` in Python
  /// (object's default: nullptr).
  VarP objectDunder(const VarP &self, const char *name, const VarP &other);
  /// A handler of callIterationBuiltin's table.
  using IterHandler = VarP (Interpreter::*)(std::vector<VarP> &args,
                                            std::map<std::string, VarP> &kwargs);
  VarP builtinIter(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP builtinNext(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP builtinZip(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP builtinMap(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP builtinFilter(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP builtinEnumerate(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP builtinReversed(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsCount(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsRepeat(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsChain(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsChainFromIterable(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsProduct(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsAccumulate(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsIslice(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsZipLongest(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP itertoolsPairwise(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// set()/frozenset() of constants (Collections.cpp).
  VarP builtinSet(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP builtinFrozenset(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// dict(...)/OrderedDict(...)/defaultdict(factory, ...) as a Dict Var (Collections.cpp).
  VarP builtinDict(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// `keys` (of a sorted kwargs map) in the order the dispatching call passed
  /// them (kwOrder_); throws Unsupported when that order is not known.
  std::vector<std::string> callOrder(std::vector<std::string> keys, const std::string &what) const;
  std::vector<std::string> kwOrder_; ///< keywords of the last CALL/CALL_FUNCTION_EX, in order
  VarP makeOrderedDict(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  VarP makeDefaultDict(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// update/setdefault/clear/copy of a Dict Var built here, clear of a
  /// List Var built here (Collections.cpp); nullptr for other names.
  VarP callContainerMethod(const VarP &container, const std::string &name, std::vector<VarP> &args,
                           std::map<std::string, VarP> &kwargs);
  // --- container methods (ContainerMethods.cpp) ---
  /// Registers `o` as a container made at capture that nothing else holds
  /// (a new list/dict/set with one reference): its mutations run on it.
  void noteFresh(const PyRef &o);
  /// Whether `v` is a constant container registered by noteFresh.
  bool isFresh(const VarP &v) const;
  /// Method descriptor `descr` of list/dict/set called on fresh constant
  /// `c` with constant arguments, run on the object; nullptr when `c` is
  /// not fresh.
  VarP freshMethod(const VarP &c, PyObject *descr, std::vector<VarP> &args,
                   std::map<std::string, VarP> &kwargs);
  /// `c[key] = *value` (`del c[key]` when `value` is null) on a fresh
  /// constant; false when `c` is not fresh.
  bool storeFresh(const VarP &c, const VarP &key, const VarP *value);
  /// index/count/copy/sort/reverse/remove of List Var `list`; nullptr for
  /// other names.
  VarP listMethod(const VarP &list, const std::string &name, std::vector<VarP> &args,
                  std::map<std::string, VarP> &kwargs);
  /// The caller's list `c` (a Const with a source) as a List Var, or its
  /// ModelOutput as a record Var (Records.cpp), of the items read through
  /// their sources, for methods that only read it (copy/index/count;
  /// keys/values/items/get): its length (keys) is guarded, not its identity.
  VarP callerListSnapshot(const VarP &c);
  VarP callerRecordSnapshot(const VarP &c);
  /// popitem/move_to_end of Dict Var `d` built here; nullptr for other names.
  VarP dictMethod(const VarP &d, const std::string &name, std::vector<VarP> &args,
                  std::map<std::string, VarP> &kwargs);
  /// `d.pop(key[, default])` on the caller's dict Var `d`: replayed after
  /// the graph; a missing key is guarded missing.
  VarP callerDictPop(const VarP &d, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// `del c[key]` (DELETE_SUBSCR).
  void deleteItem(const VarP &c, const VarP &key);
  /// `list[slice] = value` on a List Var built here.
  void storeListSlice(const VarP &list, PyObject *slice, const VarP &value);
  /// `|`/`|=` on dicts, `+=`/`*=` on lists, in-place operators on fresh
  /// constant containers; nullptr when the operands are not that.
  VarP containerOperator(const std::string &sym, const VarP &lhs, const VarP &rhs);
  /// A method descriptor of list/dict/set called on a fresh constant or on
  /// the caller's dict (pop); nullptr otherwise.
  VarP callContainerDescriptor(PyObject *fn, std::vector<VarP> &args,
                               std::map<std::string, VarP> &kwargs);
  /// `d[key]` of a defaultdict Var without `key`: its factory's value, stored.
  VarP defaultDictMissing(const VarP &d, PyObject *key);
  VarP loadAttr(const VarP &obj, PyObject *name);
  /// `super().name` with receiver `self`; `object.__getattribute__(obj, name)`
  /// (a class's own __getattribute__ calling it), guarded (SuperAttr.cpp).
  VarP superAttr(PyObject *superObj, const VarP &self, PyObject *name);
  VarP genericAttr(const VarP &obj, PyObject *name);
  /// Method `fn` of `obj`'s class bound to `obj` (inlined when called);
  /// guards that the class attribute stays `fn`, not shadowed by __dict__.
  VarP boundClassMethod(const VarP &obj, PyObject *name, PyObject *fn);
  /// Guards `type(obj).<name> is value` and (`notShadowed`) `name not in
  /// obj.__dict__`; no-op for a value without a source.
  void guardClassAttr(const VarP &obj, PyObject *name, PyObject *value, bool notShadowed);
  void guardNotInDict(int dictSource, PyObject *key); ///< `key not in <dict>`, once
  void guardCallableClass(const VarP &v); ///< what callable(v) read (PythonBuiltins.cpp)
  /// `obj.name` on tensor `obj`: a TensorMethod even when kiln cannot call it.
  VarP tensorMethodOrAttr(const VarP &obj, PyObject *name);
  /// The (key, value) pairs of a dict Var or constant (items with sources).
  std::vector<std::pair<PyRef, VarP>> dictItems(const VarP &d);
  /// Whether `t` is torch.no_grad or torch.enable_grad.
  static bool isGradContextType(PyObject *t);
  /// 0/1: the grad mode a with-block on `ctx` sets; -1: not such a block.
  static int gradContextMode(const VarP &ctx);

  VarP loadGlobal(Frame &f, PyObject *name);
  VarP loadLocal(Frame &f, int index);
  /// The Var for `value` read from `source`, guarded. With `lazy` while an instruction
  /// that only pushes what it reads runs (lazyReads_), ints, floats, strs, bools and
  /// lists become Lazy Vars, guarded when something uses them (LazyValues.cpp).
  VarP fromSource(PyObject *value, int source, bool lazy = true);
  void guardType(int source, PyObject *obj); ///< `type(value of source) is type(obj)`, once
  VarP getIter(const VarP &v);               ///< LiveIterators.cpp, as trackedNow:
  /// `v`, or the Dict/List Var another read of v's source was turned into.
  std::function<VarP()> trackedNow(const VarP &v);
  std::vector<VarP> iterItems(const VarP &v); ///< the remaining items of iterating `v`
  /// `v`'s source, or (for an nn.Module constant without one) a Constant
  /// source holding the module, so its attributes can be guarded.
  int sourceOf(const VarP &v);
  /// Guards `len(value of source) == n` (tuple, list or dict); the
  /// contents of mutable container `o` (Guard::Kind::Contents).
  void guardLength(int source, Py_ssize_t n);
  void guardContents(int source, PyObject *o);
  VarP subscript(const VarP &container, const VarP &index);
  bool truthy(const VarP &v);
  const CodeInfo &codeInfo(PyObject *code);

  mlir::MLIRContext &ctx_;
  mlir::OpBuilder b_;
  mlir::Location loc_;
  mlir::func::FuncOp func_;
  const FrameView &frame_;
  Capture &out_;
  /// Tensor inputs by source: one Var per source (Var::inputIndex); the
  /// SymInts of symbolic int arguments by source, and their value inputs.
  std::map<int, VarP> inputOfSource_, intOfSource_;
  std::map<int, mlir::Value> intValueOfSource_;
  /// The tensor object of each graph input, in order (aliasing checks);
  /// None for the random seed.
  std::vector<PyRef> inputObjects_;
  /// The graph's random seed argument (null until a random op needs it)
  /// and the number of random streams taken so far.
  mlir::Value randomSeed_;
  int64_t randomStreams_ = 0;
  /// Graph inputs updated in place -> their CopyInto effect in out_.effects.
  std::map<int, size_t> writeBackOf_;
  /// Throws Unsupported when graph input `input` shares storage with
  /// another graph input (an update of one would show through the other).
  void checkInputAliasing(int input);
  /// TensorMeta::device of the graph's tensor inputs (the last one read;
  /// graphs whose inputs disagree run eagerly, see CudaEntry.cpp).
  int graphDevice_ = -1;
  std::map<PyObject *, std::unique_ptr<CodeInfo>> codes_;
  /// The exception being handled (sys.exc_info()[1]) where the capture is:
  /// null while it is the caller's (unknown), None when there is none.
  PyRef handledExc_;
  /// Exceptions made at capture (raised, caught by the frames' handlers).
  std::set<PyObject *> madeExceptions_;
  /// Why each exception raised in the capture was raised (its break reason
  /// when a re-raise leaves the frames).
  std::map<PyObject *, std::string> raisedWhy_;
  std::vector<PyRef> keepAlive_;
  /// A module's Type guard (index into out_.guards) and a weak reference
  /// to the module, for finishModuleGuards.
  struct ModuleGuard {
    size_t guard;
    PyRef weak;
  };
  std::vector<ModuleGuard> moduleGuards_;
  /// Why module identity was pinned (null: not pinned).
  const char *pinReason_ = nullptr;
  /// The module whose next call is nn.Module.__call__ itself (reached by
  /// super().__call__ from a custom __call__): its own __call__ is skipped.
  PyObject *plainModuleCall_ = nullptr;
  /// super objects made by zeroArgSuper -> the receiver's Var.
  std::map<PyObject *, VarP> superSelf_;
  int depth_ = 0;
  long steps_ = 0;
  int rootOffset_ = -1;
  bool gradMode_ = false; ///< grad mode at the current instruction
  /// (last op emitted before it, grad mode from then on), in order.
  std::vector<std::pair<mlir::Operation *, bool>> gradTransitions_;
  /// Values markNoGrad named (opaque pointers of mlir::Value).
  std::set<const void *> noGrad_;
  LayoutSources layoutOf_;       ///< keepsLayout's
  bool gradSwitched_ = false;    ///< a with-block changed grad mode
  bool gradOnSomewhere_ = false; ///< grad mode is on in part of the graph
  /// __exit__ of each open grad-mode (or transparent) with-block → the
  /// grad mode to restore.
  std::map<PyObject *, bool> gradExits_;
  /// torch.set_grad_enabled stand-ins (setGradEnabled) -> the grad mode
  /// before the call; the exits of with-blocks on them.
  std::map<PyObject *, bool> setGradPrev_;
  std::set<PyObject *> setGradExits_;
  /// symbolOfDim's answers, by (value, dim).
  std::map<std::pair<void *, int64_t>, int> symbolOfDim_;
  /// Sizes of the torch.vmap levels being interpreted, outermost first.
  std::vector<int64_t> vmapSizes_;
  /// Side effects: the stored values; (object, name) -> the value stored
  /// (attributes; globals keyed by their dict); the caller's containers
  /// with pending mutations (read only through their Var).
  std::vector<VarP> effectValues_;
  std::map<std::pair<PyObject *, std::string>, VarP> overlay_;
  std::set<PyObject *> mutated_;
  /// Containers made at capture that only the capture holds (noteFresh).
  std::set<PyObject *> fresh_;
  /// The source of the root frame's `**kwargs` local (-1: none).
  int varKeywordsSource_ = -1;
  /// Sources of the caller's containers with pending mutations -> their Var.
  std::map<int, VarP> sourceOverlay_;
  /// Reads may be lazy now: set while an opcode whose table row says
  /// lazyReads (LOAD_FAST, LOAD_GLOBAL, LOAD_ATTR, LOAD_METHOD, LOAD_DEREF,
  /// BINARY_SUBSCR; Opcodes.def) runs (its result goes onto the
  /// stack, where the next instruction materializes what it consumes) and
  /// while containerVar reads a mutated container's items. Other readers
  /// (iterItems, dictItems ... inside one instruction) get guarded values.
  bool lazyReads_ = false;
  /// Every Lazy Var made (LazyValues.cpp; pruned when dead or materialized).
  std::vector<std::weak_ptr<Var>> lazies_;
  /// Sources already type-guarded (lazy leaves, lists replayed, ints).
  std::set<int> typeGuarded_;
};

/// The containers the capture in progress mutated (null when none).
extern const std::set<PyObject *> *gMutatedContainers;

mlir::Type elementType(mlir::MLIRContext &ctx, DType d); ///< the MLIR element type of `d`
/// The DType of an MLIR element type (throws Unsupported for others).
DType dtypeOf(mlir::Type elt);
/// Sets the float dtype torch's defaults resolve to in this capture.
void setDefaultFloat(DType d);
/// The Python decomposition (kiln/_decompositions.py) the capture inlines
/// for torch function `fn` (borrowed), or null.
PyObject *pythonDecomposition(PyObject *fn);

bool isObjectGetattribute(PyObject *fn); // SuperAttr.cpp
/// nn.Module.__call__ (borrowed, process lifetime).
PyObject *moduleCallFunction();
/// True when `o` is an nn.Module instance.
bool isModule(PyObject *o);

/// None, bool, int, float, str, and tuples/lists of those (ValueGuards.cpp).
bool isPrimitive(PyObject *o);
/// A dict of str keys and primitive values (`**kwargs` of flags).
bool isPrimitiveDict(PyObject *o);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_H
