//===- PlainObjects.h - type guards for plain Python objects ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A plain Python object read from the frame (an instance of a pure-Python
// class with an instance __dict__: HuggingFace's `self.config`, a
// dataclass of options) is guarded by its exact type, not its identity,
// while the capture only read attributes from it through sources (each read
// has its own guard), so instances of one model class with equal configs
// share one entry. A use that depends on the object itself or on state no
// source guards (`is`, id(), hashing, a builtin, operator or f-string
// evaluated on it at capture, a C method bound to it,
// a call of it as a torch op, the object in the result or in a side
// effect, a source keyed by it, a capture that failed part-way) pins it:
// its guards become identity guards again (PlainObjects.cpp). An object
// the graph stores attributes into keeps its type guard: the stores replay
// on the call's object, and an aliasing guard checks that the plain objects
// read are the same or distinct as at compile time. Lists and
// small dicts of Python data are guarded by value (Guards.h sameValue);
// the identity uses above (not the value ones) add an identity guard.
//===----------------------------------------------------------------------===//
#ifndef KILN_CAPTURE_INTERP_PLAINOBJECTS_H
#define KILN_CAPTURE_INTERP_PLAINOBJECTS_H

#include <Python.h>

#include <cstddef>

namespace kiln {

struct Capture;

/// Whether `o` is an instance of a pure-Python class (a heap type whose
/// metaclass is `type` or abc.ABCMeta and whose bases are heap types or
/// `object`) with an
/// instance __dict__, and not a module, tensor, container or exception.
bool isPlainObject(PyObject *o);

/// Whether `o` is an instance of a namedtuple class (collections.namedtuple,
/// typing.NamedTuple): a Python subclass of tuple itself with `_fields`,
/// whose items are read as a tuple's (no own __getitem__/__iter__/__len__).
/// Read from the frame it is guarded by exact class, like a plain object,
/// its fields through their own sources (Interpreter::fromSource).
bool isNamedTuple(PyObject *o);

/// A tuple, list or namedtuple holding a tensor (at any depth of them).
bool holdsTensor(PyObject *o);

/// Starts and ends the plain-object bookkeeping of the capture filling
/// `out` (the Interpreter's constructor and destructor; captures nest).
void plainObjectsBegin(Capture &out);
void plainObjectsEnd(Capture &out);

/// Records guard `guard` of `out` (a Type guard on plain object `o`).
void addPlainObjectGuard(Capture &out, size_t guard, PyObject *o);

/// The capture in progress depends on `o` itself (or on state of it no
/// guard covers): if `o` is a plain object its guards become identity; a
/// list of them (addObjectListGuard) is pinned with its items.
void pinPlainObject(PyObject *o, const char *why);

/// The capture stores an attribute into `o`: a plain object keeps its type
/// guard, and the capture gains a guard that the plain objects it read are
/// the same or distinct as at compile time (Guard::Kind::Aliasing).
void noteAttributeStore(PyObject *o);

/// The capture mutates the caller's list/dict `o` read from `source`: an
/// aliasing guard checks that the lists, dicts and plain objects the
/// capture read are the same or distinct objects as at compile time
/// (`f(x, l, l)` after compiling `f(x, l1, l2)` recompiles).
void noteContainerMutation(int source, PyObject *o);

/// Whether `o` is plain data a value guard compares cheaply: primitives,
/// and small tuples, lists, sets and primitive-keyed dicts of them (at most
/// 256 items in all; ValueGuards.cpp).
bool isPlainData(PyObject *o);

/// Records guard `guard` of `out` (an Equals guard on list/dict `o`, read
/// from the frame and guarded by value so that an equal one shares the
/// entry).
void addValueGuard(Capture &out, size_t guard, PyObject *o);

/// Records guard `guard` of `out`: a Type guard (with a Length guard) on
/// `o`, a list of plain objects or a ModelOutput (isModelOutputRecord, its
/// keys in order), whose items are read through their own sources. A use
/// of `o` as a whole (pinPlainObject, pinIdentity) or an update of it turns
/// it into identity guards (a list: with each item).
void addItemsGuard(Capture &out, size_t guard, PyObject *o);

/// Whether `o` is a HuggingFace ModelOutput (a dict subclass that is a
/// dataclass with `to_tuple`): a model's output passed back in
/// (`encoder_outputs` of generate()).
bool isModelOutputRecord(PyObject *o);

/// Whether dict subclass instance `o` (defaultdict, OrderedDict, Counter)
/// keeps dict's own `name` (`__getitem__`, `__len__`): its items and length
/// then read as a plain dict's.
bool keepsDictMethod(PyObject *o, const char *name);

/// The capture depends on the identity of `o` (`is`, id(), `o` returned
/// or stored by a side effect, a source keyed by it): pinPlainObject for a
/// plain object; a list/dict guarded by value gains an identity guard.
void pinIdentity(PyObject *o, const char *why);

/// pinPlainObject on `o` and on what the tuples, lists and dicts in it hold.
void pinPlainObjectsIn(PyObject *o, const char *why);

/// Turns the recorded Type guards into identity guards where pinned, or all
/// of them when `pinAll` is set (`why` says why); scans the result, the
/// side effects and the sources for plain objects first.
void finishPlainObjectGuards(Capture &out, const char *pinAll);

} // namespace kiln

#endif // KILN_CAPTURE_INTERP_PLAINOBJECTS_H
