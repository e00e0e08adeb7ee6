# SPDX-License-Identifier: Apache-2.0
"""kiln: a JIT graph compiler for PyTorch programs, built on MLIR.

``kiln.compile(model_or_fn)`` returns an object that behaves like the
original; its calls are captured from Python bytecode by a C++ frame hook,
compiled through the ``kiln`` MLIR dialect and LLVM's ORC JIT, and run on the
caller's tensors. Unsupported code runs eagerly, with the reason logged.
``torch.compile(model, backend=kiln.backend)`` and ``kiln.from_fx(gm)`` run
torch.fx GraphModules the same way, ``kiln.from_export(ep)`` (or
``kiln.compile(ep)``) a torch.export ExportedProgram. ``kiln.explain(fn)(*args)``
reports the graphs, graph breaks and guards of one call. ``kiln.export(model,
inputs, path)`` writes a self-contained ``.kiln`` artifact that
``kiln.load(path)`` (the light ``kiln_runtime`` package) and the C/C++ runtime
run without the compiler (docs/deployment.md).
"""
from kiln.api import compile, mark_dynamic, reset, stats  # noqa: A004
from kiln.explain import explain
from kiln._export import ExportError, export
from kiln._exported_program import from_export
from kiln_runtime import load
from kiln.fx import aot_backend, backend, from_fx
from kiln import config
from kiln import quant

__all__ = ["compile", "mark_dynamic", "reset", "stats", "config", "explain", "backend",
           "aot_backend", "from_fx", "from_export", "export", "ExportError", "load", "quant"]
__version__ = "0.1.0"
