//===- CaptureTimeCalls.h - library methods evaluated at capture -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to capture/interp: calls the capture resolves itself. Methods
// listed in kiln/_capture_time.py (HuggingFace's
// PretrainedConfig.get_text_config) are called at capture on a constant
// receiver instead of being inlined; the receiver is guarded by identity
// and its __dict__ by value. The Python dunders len() and truth tests run
// on an object built in the frame (its class's __len__/__bool__ inlined).
// torch.nn modules constructed in the compiled code are built at capture.
// Also the graph's device for capture/ops' tensor factories.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_CAPTURETIMECALLS_H
#define KILN_FRONTEND_CAPTURE_INTERP_CAPTURETIMECALLS_H

#include "capture/interp/Interp.h"

namespace kiln {

/// A friend of Interpreter (it adds guards and sources).
struct CaptureTimeCalls {
  /// `callee(*args, **kwargs)`, callee a BoundMethod: the method's result
  /// now, as a constant, when the method is listed and the receiver and
  /// arguments are constants; nullptr otherwise (the caller inlines it).
  static VarP boundMethod(Interpreter &I, const VarP &callee, std::vector<VarP> &args,
                          std::map<std::string, VarP> &kwargs);
  /// type(obj).<name>(obj) for an Object Var whose class defines `name`
  /// in Python (inlined; the class attribute guarded); nullptr when the
  /// class does not define it.
  static VarP objectDunder(Interpreter &I, const VarP &obj, const char *name);
  /// len(obj) of an Object Var or caller's plain object: its __len__, a
  /// Const int >= 0 (else Unsupported, a UserError where eager raises).
  static VarP objectLen(Interpreter &I, const VarP &obj);
  /// The class whose dunders objectDunder inlines for `v`: an Object Var's
  /// class, or the type of a caller's plain object (a Const Var with a
  /// source, isPlainObject: `len(buf)`, `if buf` follow its state through
  /// the guards of what the inlined dunder reads); null for other values.
  static PyTypeObject *dunderClass(Interpreter &I, const VarP &v);
  /// `what` (a builtin, operator or format) is evaluated at capture on
  /// Const `v`: when `v` is a plain object whose class defines a value
  /// dunder (__eq__, __str__, __contains__, __iter__ ...) in Python, the
  /// result depends on the object's state, so its __dict__ is guarded by
  /// value (plain data only); otherwise the evaluation is a break.
  static void guardDunderState(Interpreter &I, const VarP &v, const char *what);
  /// Guards for builtin `name` evaluated at capture on `args` beyond their
  /// values: isinstance/issubclass against an ABC follow its registry
  /// (abc.get_cache_token() guarded: every register() changes it); items
  /// of a caller's list or tuple get guardDunderState (sorted() calls their
  /// __lt__).
  static void guardBuiltinState(Interpreter &I, const std::string &name,
                                const std::vector<VarP> &args);
  /// `obj.<name>` of a caller's plain object whose class attribute `name`
  /// is a property with a Python getter or a descriptor whose class defines
  /// __get__ in Python: the getter inlined (its reads guarded through
  /// sources, its stores replayed), so it runs once per call as in eager
  /// (evaluated at capture, the capture and every guard check ran it);
  /// nullptr for other attributes.
  static VarP descriptorAttr(Interpreter &I, const VarP &obj, PyObject *name);
  /// Guards `value of dictSource == snapshot` (once per source).
  static void guardState(Interpreter &I, int dictSource, PyRef snapshot);
  /// `cls(*args, **kwargs)` for an nn.Module class: the module built now
  /// (BuiltModules.cpp), a constant without a source; nullptr when `cls`
  /// is not a module class, a break when it cannot be built at capture.
  static VarP constructModule(Interpreter &I, const VarP &callee, PyObject *cls,
                              std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// type(m).<name>(m) for a module `m` built at capture whose class
  /// defines `name` in Python (inlined, the class attribute guarded);
  /// nullptr for any other value.
  static VarP builtModuleDunder(Interpreter &I, const VarP &m, const char *name);
  /// TensorMeta::device of the graph's tensor inputs read so far; nullopt
  /// before the first one (the device is not known yet).
  static std::optional<int> graphDevice(const Interpreter &I);
};

/// Whether `o` is a module this capture built (CaptureTimeCalls::constructModule).
bool isBuiltModule(const Interpreter &I, PyObject *o);
/// Whether `v` is, or holds, such a module.
bool holdsBuiltModule(const Interpreter &I, const VarP &v, int depth = 0);
/// Drops `I`'s built modules (its destructor).
void builtModulesEnd(const Interpreter &I);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_CAPTURETIMECALLS_H
