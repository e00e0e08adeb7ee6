//===- Guards.h - sources and guards of a compiled entry -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A Source says where a value the capture read comes from (a local, a
// global, an item of a module's __dict__ ...), so the runtime can fetch it
// again on every call. A Guard is an assumption the capture made about a
// source (identity, value, tensor metadata); a compiled entry may run only
// when all its guards hold. Everything here is evaluated in C++.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_GUARDS_H
#define KILN_FRONTEND_GUARDS_H

#include "PyRef.h"
#include "TensorInfo.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct ItemCache; // Guards.cpp: the last slice an Item source built

/// The parts of a frame sources are resolved against (all borrowed).
struct FrameView {
  PyObject *const *locals = nullptr;
  int numLocals = 0;
  PyObject *globals = nullptr;
  PyObject *builtins = nullptr;
  PyObject *func = nullptr; ///< the function object being called
};

/// Where a value comes from.
struct Source {
  enum class Kind {
    Local,     ///< frame local `index`
    Globals,   ///< the frame's globals dict
    Constant,  ///< `key` itself (a dict or object the capture holds on to)
    Builtin,   ///< builtins[key]
    ObjDict,   ///< parent.__dict__
    DictItem,  ///< parent[key] where parent is a dict
    Attr,      ///< getattr(parent, key)
    TupleItem, ///< parent[index] where parent is a tuple or list
    Function,  ///< the frame's function object (for its closure cells)
    /// The attribute `key` found on type `parent` or its bases without
    /// binding (`_PyType_Lookup`): a method or class attribute.
    TypeLookup,
    /// `torch.from_numpy(parent)` where parent is exactly a numpy.ndarray
    /// (a NumPy array graph input: its tensor shares the array's memory).
    FromNumpy,
    /// `parent[key]` through type(parent).__getitem__ (a new object per
    /// call: `self.layers[:n]`, a slice of a ModuleList or Sequential).
    Item,
    /// `parent.<key>()`, a method without arguments (`x.storage_offset()`
    /// of a tensor input, compared by value).
    MethodCall,
  };
  Kind kind;
  int parent = -1;
  int index = 0;
  /// str for Builtin/DictItem/Attr/TypeLookup, the index for Item; for
  /// Constant the object, or
  /// (`weak`) a weak reference to it.
  PyRef key;
  /// Constant: `key` is a weakref; the source cannot be resolved once its
  /// object died (an nn.Module: entries must not keep user modules alive).
  bool weak = false;
  /// Item of a module container: the slice built by the last resolve,
  /// reused while the parent and its `_modules` are unchanged.
  std::shared_ptr<ItemCache> itemCache;
};

/// The sources of one entry; identical sources are stored once.
class SourceTable {
public:
  /// Adds (or finds) a source and returns its index. A Constant source of
  /// an nn.Module holds it weakly (Source::weak).
  int add(Source::Kind kind, int parent, int index, PyObject *key);
  /// Whether a weakly held Constant source's object died (the entry can
  /// never match again).
  bool hasDeadReference() const;
  /// Whether some Constant source holds an nn.Module (weakly): the capture
  /// reached that very module, not one found through the frame.
  bool holdsModuleConstant() const;
  /// Human-readable path, e.g. `L['self'].__dict__['_modules']['fc1']`.
  std::string describe(int i, const std::vector<std::string> &localNames) const;
  /// Resolves every source against `frame` into `out` (new references);
  /// returns the index of the first source that cannot be resolved, or -1.
  /// Never leaves a Python error set.
  int resolve(const FrameView &frame, std::vector<PyRef> &out) const;
  size_t size() const { return sources_.size(); }
  /// Source `i`.
  const Source &operator[](int i) const { return sources_[i]; }

private:
  std::vector<Source> sources_;
};

/// One assumption about a source.
struct Guard {
  enum class Kind {
    Identity, ///< `value is expected`
    Equals,   ///< sameValue(value, expected): types and values all the way down
    Tensor,   ///< dtype, device, sizes, strides, requires_grad
    Length,   ///< `len(value) == expected` (an int); a dict: its keys in order (a tuple)
    /// Global state: `fn(*args) == result` with `expected` = (fn, args,
    /// result) (e.g. torch._C._is_any_autocast_enabled() == False);
    /// `source` is -1 (no frame value is read).
    Call,
    /// `hasattr(value, name) == has` with `expected` = (name, has).
    HasAttr,
    /// `type(value) is expected` (a value the graph does not depend on,
    /// read again when a side effect is replayed: SideEffects.cpp).
    Type,
    /// `expected not in value` where value is an instance __dict__ (or
    /// missing): nothing shadows a method found on the class.
    NotInDict,
    /// The objects of several sources are the same or distinct as at
    /// compile time: `expected` is a flat tuple (source, group, source,
    /// group ...), groups numbered from 0 by first sight; sources of one
    /// group must hold one object, different groups different objects.
    /// `source` is -1. (Plain objects whose attributes the graph stores,
    /// guarded by type: PlainObjects.cpp.)
    Aliasing,
    /// sameValue(plainContents(value), expected): the contents of a mutable
    /// container kiln reads as a whole at capture (a deque, array.array,
    /// bytearray, memoryview, mappingproxy, dict view, list/set/dict
    /// subclass), next to its Identity guard: an in-place change recompiles.
    Contents,
    /// torch.Tensor's methods that the user replaced are those of the
    /// capture (TensorMethods.h): `expected` = (tag, {name: value}), the
    /// class's version tag then (a fast path) and the replaced methods.
    /// `source` is -1.
    TensorMethods,
  };
  Kind kind;
  int source;
  /// Identity: the object (a weakref to it when `weak`); Equals/Length: the
  /// value; Tensor: the tensor's exact type (unset: any); NotInDict: the key.
  PyRef expected;
  /// Identity: `expected` is a weakref (the object is an nn.Module; the
  /// guard fails once it died, and the entry is then dropped).
  bool weak = false;
  PyObject *dtype = nullptr;           ///< Tensor: torch dtype singleton
  std::vector<int64_t> sizes, strides; ///< Tensor: kSymbolicSize for a symbolic dim
  bool requiresGrad = false;
  int device = TensorMeta::kCpuDevice; ///< Tensor: TensorMeta::device

  /// Why this guard would fail, in words (used by recompile logs).
  std::string describe(const SourceTable &sources,
                       const std::vector<std::string> &localNames) const;
};

/// Whether `a` still holds the value `b` (an Equals guard's test): the same
/// types all the way down (1, 1.0 and True differ), floats bit for bit
/// (-0.0 is not 0.0; a NaN equals itself), lists, tuples, dicts and sets
/// item by item in order (a dict's or set's order is what iterating it
/// unrolls); other objects by `==`. Never leaves a Python error set.
bool sameValue(PyObject *a, PyObject *b, int depth = 0);

/// A copy of `o` an Equals guard can keep: lists, tuples, dicts and sets
/// copied all the way down (the caller may mutate a nested list in place),
/// other objects shared. Null (with a Python error set) when copying fails.
PyRef snapshotValue(PyObject *o);

/// The contents of `o` as a plain list, set, dict or bytes when `o` is a
/// mutable container other than an exact list/set/dict (Guard::Kind::
/// Contents); null otherwise (and on failure, with no Python error left).
PyRef plainContents(PyObject *o);

/// The keys of dict `d` as a tuple in iteration order: insertion order for a
/// dict, the mapping's own order for a subclass (an OrderedDict after
/// `move_to_end`, as module hook dicts are with `prepend=True`). Null, with
/// a Python error set, on failure.
PyRef dictKeysInOrder(PyObject *d);

/// Evaluates `guards` on resolved source values; returns the index of the
/// first failing guard or -1. Never leaves a Python error set.
int checkGuards(const std::vector<Guard> &guards, const std::vector<PyRef> &values);

/// Whether some weak Identity guard of `guards` refers to an object that
/// died (the entry holding them can never match again).
bool hasDeadReference(const std::vector<Guard> &guards);

/// Whether identity guards and Constant sources hold `o` weakly: an
/// nn.Module (its lifetime is the user's; Dynamo holds modules weakly too).
bool holdWeakly(PyObject *o);

} // namespace kiln

#endif // KILN_FRONTEND_GUARDS_H
