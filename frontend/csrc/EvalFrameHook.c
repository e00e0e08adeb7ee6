/*===- EvalFrameHook.c - the PEP 523 frame evaluation hook ------------------===
 * SPDX-License-Identifier: Apache-2.0
 *
 * The only file that touches CPython's internal frame layout
 * (_PyInterpreterFrame, Py_BUILD_CORE). It hands each frame to kiln's C++
 * side when the hook is active on this thread; when C++ handled the frame
 * (ran compiled code), the frame is not evaluated. Written in C because the
 * internal headers are C. Supported: CPython 3.11 and 3.12.
 *===----------------------------------------------------------------------===*/
#define Py_BUILD_CORE
#include <Python.h>
#include <internal/pycore_frame.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030D0000
#error "kiln's frame hook supports CPython 3.11 and 3.12"
#endif

/* Implemented in Hook.cpp. Returns a new reference (or NULL with an error
 * set) when *handled is set; otherwise the frame is evaluated normally.
 * `locals` are borrowed. */
extern PyObject *kiln_on_frame(PyObject *code, PyObject *func, PyObject **locals, int num_locals,
                               PyObject *globals, PyObject *builtins, int *handled);
extern int kiln_hook_active(void);
/* Adds `delta` (+1 / -1) to the hook's pause count on this thread (Hook.cpp). */
extern void kiln_hook_pause(int delta);

#if PY_VERSION_HEX >= 0x030C0000
/* 3.12 pops the frame inside _PyEval_EvalFrameDefault; a frame we do not
 * evaluate must be released and popped here (what ceval's
 * clear_thread_frame does). Only frames without a frame object get here. */
static void kiln_clear_and_pop(PyThreadState *tstate, _PyInterpreterFrame *frame) {
  for (int i = 0; i < frame->stacktop; i++)
    Py_XDECREF(frame->localsplus[i]);
  Py_XDECREF(frame->f_locals);
  Py_DECREF(frame->f_funcobj);
  Py_DECREF(frame->f_code);
  _PyThreadState_PopFrame(tstate, frame);
}
#define KILN_FRAME_FUNC(f) ((f)->f_funcobj)
#else
#define KILN_FRAME_FUNC(f) ((PyObject *)(f)->f_func)
#endif

/* Whether `code` is the wrapper torch.compiler.disable / torch._dynamo.disable
 * (recursive=True) and torch._disable_dynamo (torch.utils.checkpoint) call
 * through: DisableContext.__call__'s `_fn`, one code object for them all. */
static int kiln_is_dynamo_disable_wrapper(PyCodeObject *code) {
  static PyCodeObject *known = NULL;
  if (known)
    return code == known;
  if (!PyUnicode_Check(code->co_qualname) ||
      PyUnicode_CompareWithASCIIString(code->co_qualname, "DisableContext.__call__.<locals>._fn") !=
          0)
    return 0;
  Py_INCREF(code);
  known = code;
  return 1;
}

static PyObject *kiln_eval_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag) {
  if (throwflag || !kiln_hook_active())
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
  PyCodeObject *code = frame->f_code;
  if (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
  if (!(code->co_flags & CO_OPTIMIZED) || kiln_is_dynamo_disable_wrapper(code)) {
    /* A module or class body (an import, a class statement, exec): it runs
     * once, and neither it nor what it calls (metaclasses, registries
     * filled at import time) is captured. A function the user excluded
     * with torch.compiler.disable (and torch.utils.checkpoint, which torch
     * excludes: its recompute must save what its forward saved) runs
     * eagerly with everything it calls, as under Dynamo. */
    kiln_hook_pause(1);
    PyObject *result = _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    kiln_hook_pause(-1);
    return result;
  }
#if PY_VERSION_HEX >= 0x030C0000
  if (frame->frame_obj != NULL)
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
#endif
  int handled = 0;
  PyObject *result = kiln_on_frame((PyObject *)code, KILN_FRAME_FUNC(frame), frame->localsplus,
                                   code->co_nlocals, frame->f_globals, frame->f_builtins, &handled);
  if (!handled)
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
#if PY_VERSION_HEX >= 0x030C0000
  kiln_clear_and_pop(tstate, frame);
#endif
  /* 3.11: _PyEval_Vector clears and pops the frame after we return. */
  return result;
}

/* Installs (on != 0) or removes kiln's hook for the current interpreter. */
void kiln_install_hook(int on) {
  _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(),
                                       on ? kiln_eval_frame : _PyEval_EvalFrameDefault);
}
