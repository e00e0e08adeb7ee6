# SPDX-License-Identifier: Apache-2.0
"""kiln.quant: int8 quantization compiled by kiln (docs/quantization.md).

In torch.ao's shape::

    prepared = kiln.quant.prepare(model, kiln.quant.dynamic_int8())
    fast = kiln.compile(prepared)   # int8 GEMMs (oneMKL VNNI) inside kiln's graph

``dynamic_int8(activations="per_token" | "per_tensor")``,
``static_int8(observer="minmax" | "histogram" | "percentile")``,
``weight_only_int8()`` and ``weight_only_int4(group_size=128)``
quantize ``nn.Linear`` layers (static int8 also ``nn.Conv2d``;
per-channel symmetric int8 weights),
filtered by ``module_types`` and ``include``/``exclude`` name patterns.
Static int8 calibrates first::

    prepared = kiln.quant.prepare(model, kiln.quant.static_int8())
    for x in calibration_batches:
        prepared(x)                 # observers record activation ranges
    fast = kiln.compile(prepared)   # converts (kiln.quant.convert), then compiles

``prepared`` runs eagerly too (the torch reference of the same
arithmetic). Quantization-aware training fake-quantizes the layers while
they train, then converts to the same int8 layers::

    qat = kiln.quant.prepare_qat(model, kiln.quant.static_int8())
    step = kiln.compile(train_step)   # trains qat: fake quantization in the graph
    ...
    fast = kiln.compile(kiln.quant.convert(qat.eval()))

(``dynamic_int8()`` and ``weight_only_int8()`` train the same way.)
A model converted by PT2E (``convert_pt2e``) runs on kiln's int8 kernels
after ``kiln.quant.from_pt2e(converted)``, one converted by torch.ao's
eager-mode or FX-mode static flow (``convert`` / ``convert_fx``) after
``kiln.quant.from_torch_ao(converted, example_inputs)``. ``fp8()`` makes
float8_e4m3fn layers for CUDA's fp8 GEMMs (sm_89 and later; on the CPU they
run their eager reference).
"""
from kiln.quant._config import (QuantConfig, dynamic_int8, fp8, static_int8, weight_only_int4,
                                weight_only_int8)
from kiln.quant._modules import QuantizedLinear, QuantizedLinearFP8, QuantizedLinearInt4, prepare
from kiln.quant._pt2e import from_pt2e
from kiln.quant._torch_ao import FakeQuantize, Requantized, Unreached, from_torch_ao
from kiln.quant._qat import QATConv2d, QATDynamicLinear, QATInt4Linear, QATLinear, prepare_qat
from kiln.quant._static import (ObservedConv2d, ObservedLinear, StaticQuantizedConv2d,
                                StaticQuantizedLinear, convert)

__all__ = ["QuantConfig", "QuantizedLinear", "QuantizedLinearInt4", "QuantizedLinearFP8", "ObservedLinear", "ObservedConv2d", "QATLinear",
           "QATConv2d", "QATDynamicLinear", "QATInt4Linear",
           "StaticQuantizedLinear", "StaticQuantizedConv2d",
           "dynamic_int8", "weight_only_int8", "static_int8", "weight_only_int4", "fp8",
           "prepare_qat", "prepare", "convert", "from_pt2e", "from_torch_ao", "FakeQuantize",
           "Requantized", "Unreached"]
