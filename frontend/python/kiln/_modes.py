# SPDX-License-Identifier: Apache-2.0
"""Which torch function / dispatch modes a frame is entered under.

A user mode (a TorchFunctionMode rewriting ops, FlopCounterMode, a
TorchDispatchMode logging ops, ``torch.set_default_device("meta")``) sees
every op eagerly; kiln's graph would bypass it, so such a frame runs eagerly.
Modes that do not change what the ops compute, or see nothing kiln's graph
runs, are let through: AOTAutograd's custom-op alias checker and a default
device of ``cpu``. The capture calls :func:`entry_modes` and guards on its
answer (frontend/csrc/capture/interp/GlobalState.cpp)."""
import torch
from torch.utils._device import DeviceContext

NO_MODES, BENIGN_MODES, USER_MODES = 0, 1, 2

_BENIGN_TYPES = {"_AnalyzeCustomOpInputOutputMode"}  # torch._library's alias checker


def _benign(mode) -> bool:
    if type(mode).__name__ in _BENIGN_TYPES:
        return True
    return isinstance(mode, DeviceContext) and torch.device(mode.device).type == "cpu"


def entry_modes() -> int:
    """NO_MODES, BENIGN_MODES (only modes kiln may bypass) or USER_MODES."""
    functions = torch._C._len_torch_function_stack()
    dispatch = torch._C._len_torch_dispatch_stack()
    if not functions and not dispatch:
        return NO_MODES
    modes = [torch._C._get_function_stack_at(i) for i in range(functions)]
    modes += [torch._C._get_dispatch_stack_at(i) for i in range(dispatch)]
    return BENIGN_MODES if all(_benign(m) for m in modes) else USER_MODES
