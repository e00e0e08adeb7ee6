# SPDX-License-Identifier: Apache-2.0
"""Quantization configs: what ``kiln.quant.prepare`` quantizes and how.

A config names a scheme (``dynamic_int8``: int8 weights and activations
quantized per call; ``static_int8``: activations quantized with a scale and
zero point calibrated beforehand; ``weight_only_int8``: int8 weights, float
activations; ``weight_only_int4``: int4 weights with a scale per group of
input features, float activations; ``fp8``: float8 e4m3 weights and
activations for CUDA's fp8 GEMMs),
the activation granularity, and which modules it applies to: by type
(``module_types``, only ``torch.nn.Linear`` today) and by qualified name
(``include``/``exclude``: ``fnmatch`` patterns such as ``"encoder.*"``; a
module is quantized when it matches a type, matches ``include`` if given,
and matches no ``exclude``). Bad arguments raise
``ValueError``/``TypeError`` naming the argument.
"""
from __future__ import annotations

import dataclasses
import fnmatch
from dataclasses import dataclass

import torch
from torch import nn

from kiln.quant._ops import ACTIVATIONS

SUPPORTED_MODULES = (nn.Linear,)
STATIC_MODULES = (nn.Linear, nn.Conv2d)


@dataclass(frozen=True)
class QuantConfig:
    """One quantization scheme and the modules it applies to."""

    scheme: str
    activations: str
    module_types: tuple
    include: tuple | None
    exclude: tuple
    observer: str | None = None
    percentile: float | None = None
    group_size: int | None = None

    def selects(self, name: str, module: nn.Module, as_type=None) -> bool:
        """Whether ``module`` (qualified name ``name``; of type ``as_type``
        when given) is quantized."""
        if (as_type or type(module)) not in self.module_types:
            return False
        if self.include is not None and not any(fnmatch.fnmatchcase(name, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(name, p) for p in self.exclude)


def _patterns(what, value):
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    value = tuple(value)
    if not all(isinstance(p, str) for p in value):
        raise TypeError(f"kiln.quant: {what} must be a str or a sequence of str patterns")
    return value


def _module_types(scheme, types):
    types = tuple(types)
    supported = STATIC_MODULES if scheme == "static_int8" else SUPPORTED_MODULES
    for t in types:
        if not (isinstance(t, type) and issubclass(t, nn.Module)):
            raise TypeError(f"kiln.quant.{scheme}: module_types holds {t!r}, not an nn.Module type")
        if t not in supported:
            names = " and ".join(f"torch.nn.{s.__name__}" for s in supported)
            raise NotImplementedError(
                f"kiln.quant.{scheme}: quantizing {t.__module__}.{t.__qualname__} is not "
                f"supported yet (only {names})")
    return types


def _config(scheme, activations, module_types, include, exclude, observer=None, percentile=None):
    if activations not in (*ACTIVATIONS, "static"):
        raise ValueError(f"kiln.quant.{scheme}: activations={activations!r} is not one of "
                         f"{ACTIVATIONS[:2]}")
    return QuantConfig(scheme, activations, _module_types(scheme, module_types),
                       _patterns("include", include), _patterns("exclude", exclude) or (),
                       observer, percentile)


def dynamic_int8(activations="per_token", module_types=(nn.Linear,), include=None, exclude=(),
                 dtype=torch.qint8):
    """Dynamic int8: per-channel symmetric int8 weights, activations
    quantized per call (``"per_token"``: a scale per row; ``"per_tensor"``).
    ``dtype`` as in ``torch.ao.quantization.quantize_dynamic`` (only
    ``torch.qint8``/``torch.int8``)."""
    if dtype not in (torch.qint8, torch.int8):
        raise ValueError(f"kiln.quant.dynamic_int8: dtype {dtype} is not supported "
                         "(int8 only: torch.qint8)")
    if activations == "none":
        raise ValueError("kiln.quant.dynamic_int8: activations='none' is weight-only: "
                         "use kiln.quant.weight_only_int8()")
    return _config("dynamic_int8", activations, module_types, include, exclude)


def weight_only_int8(module_types=(nn.Linear,), include=None, exclude=()):
    """Weight-only int8: per-channel symmetric int8 weights, float activations."""
    return _config("weight_only_int8", "none", module_types, include, exclude)


def static_int8(observer="minmax", module_types=(nn.Linear, nn.Conv2d), include=None, exclude=(),
                dtype=torch.quint8, percentile=99.99):
    """Static int8 with calibration: per-channel symmetric int8 weights,
    activations per-tensor affine uint8 with a scale and zero point fixed by
    the inputs calibration batches show (torch.ao's ``observer``:
    ``"minmax"`` or ``"histogram"``, as PT2E's X86InductorQuantizer, or
    ``"percentile"``: the range between the ``100 - percentile``-th and the
    ``percentile``-th percentiles of the values seen, outliers clipped).
    ``dtype``: the activations' (only ``torch.quint8``)."""
    if observer not in ("minmax", "histogram", "percentile"):
        raise ValueError(f"kiln.quant.static_int8: observer={observer!r} is not one of "
                         "('minmax', 'histogram', 'percentile')")
    if observer == "percentile" and not 50.0 < float(percentile) <= 100.0:
        raise ValueError(f"kiln.quant.static_int8: percentile={percentile!r} is not in "
                         "(50, 100]")
    if dtype not in (torch.quint8, torch.uint8):
        raise ValueError(f"kiln.quant.static_int8: activation dtype {dtype} is not supported "
                         "(uint8 only: torch.quint8)")
    return _config("static_int8", "static", module_types, include, exclude, observer,
                   float(percentile) if observer == "percentile" else None)


def weight_only_int4(group_size=128, module_types=(nn.Linear,), include=None, exclude=()):
    """Weight-only int4: symmetric int4 weights (values in [-7, 7]) with one
    float32 scale per group of ``group_size`` consecutive input features
    (``max|w| / 7`` over the group; a multiple of 32), float activations."""
    if not isinstance(group_size, int) or group_size <= 0 or group_size % 32:
        raise ValueError(f"kiln.quant.weight_only_int4: group_size={group_size!r} is not a "
                         "positive multiple of 32")
    config = _config("weight_only_int4", "none", module_types, include, exclude)
    return dataclasses.replace(config, group_size=group_size)
def fp8(activations="per_token", module_types=(nn.Linear,), include=None, exclude=()):
    """float8 (e4m3) weights and activations for CUDA's fp8 GEMMs (sm_89 and
    later, e.g. sm_90): one scale per output channel for the weight
    (``max|w| / 448``) and per row (``"per_token"``) or per tensor for the
    activations, computed per call; products summed in float32. On the CPU
    the layers run their eager reference (``kiln.quant._ops.linear_fp8``)."""
    if activations not in ("per_token", "per_tensor"):
        raise ValueError(f"kiln.quant.fp8: activations={activations!r} is not one of "
                         "('per_token', 'per_tensor')")
    return _config("fp8", activations, module_types, include, exclude)
