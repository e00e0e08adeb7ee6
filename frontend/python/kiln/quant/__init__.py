# SPDX-License-Identifier: Apache-2.0
"""kiln.quant: int8 quantization compiled by kiln (docs/quantization.md).

In torch.ao's shape::

    prepared = kiln.quant.prepare(model, kiln.quant.dynamic_int8())
    fast = kiln.compile(prepared)   # int8 GEMMs (oneMKL VNNI) inside kiln's graph

``dynamic_int8(activations="per_token" | "per_tensor")`` and
``weight_only_int8()`` quantize ``nn.Linear`` layers (per-channel symmetric
int8 weights), filtered by ``module_types`` and ``include``/``exclude``
name patterns. ``prepared`` runs eagerly too (the torch reference of the
same arithmetic). ``static_int8``, ``weight_only_int4``, ``fp8`` and
``prepare_qat`` are not implemented yet and raise NotImplementedError.
"""
from kiln.quant._config import (QuantConfig, dynamic_int8, fp8, prepare_qat, static_int8,
                                weight_only_int4, weight_only_int8)
from kiln.quant._modules import QuantizedLinear, prepare

__all__ = ["QuantConfig", "QuantizedLinear", "dynamic_int8", "weight_only_int8", "static_int8",
           "weight_only_int4", "fp8", "prepare_qat", "prepare"]
