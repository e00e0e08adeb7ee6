# SPDX-License-Identifier: Apache-2.0
"""``kiln.quant.from_pt2e``: a model PT2E converted, rewritten for kiln's int8 kernels.

``convert_pt2e`` (torch.ao / torchao PT2E, e.g. with X86InductorQuantizer)
leaves a GraphModule whose quantized layers are patterns of
``quantized_decomposed`` ops on uint8/int8 tensors::

    xq = quantize_per_tensor(x, s, z, 0, 255, uint8); xd = dequantize_per_tensor(xq, s, z, ...)
    wd = dequantize_per_channel(w_int8, w_scales, w_zeros, 0, -128, 127, int8)
    y  = aten.conv2d(xd, wd, bias, ...)      (or aten.linear(xd, wd, bias))

kiln's capture has no int8 dtype, so compiled as it is such a model breaks
at every quantize. ``from_pt2e`` rewrites each such convolution / linear
into the call kiln's static int8 layers make (``_ops.conv2d_static_int8`` /
``linear_static_int8``: the same arithmetic, which kiln compiles into
oneDNN's u8 x s8 convolution / its int8 GEMM) and every other
quantize/dequantize pair (around pooling, flatten, residual adds) into
``torch.fake_quantize_per_tensor_affine`` with the same scale and zero
point (bit-equal to the pair; kiln lowers it). Patterns it does not know
stay as they are. torch.export's input check (the ``_guards_fn`` module,
which kiln's capture cannot inline) is dropped: kiln guards the inputs'
sizes itself and compiles a graph per size.
"""
from __future__ import annotations

import copy

import torch
from torch import fx

from kiln.quant import _ops

_qd = torch.ops.quantized_decomposed


def _call(node, target) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target == target


def _attr(gm: fx.GraphModule, node) -> torch.Tensor | None:
    if not isinstance(node, fx.Node) or node.op != "get_attr":
        return None
    value = gm
    for part in node.target.split("."):
        value = getattr(value, part)
    return value if isinstance(value, torch.Tensor) else None


def _tensor_pair(dq):
    """(x, scale, zero point, quant_min, quant_max) of ``dq`` =
    dequantize_per_tensor(quantize_per_tensor(x, ...)) with the same
    Python-number parameters; None otherwise."""
    if not _call(dq, _qd.dequantize_per_tensor.default):
        return None
    q = dq.args[0]
    if not _call(q, _qd.quantize_per_tensor.default) or tuple(q.args[1:]) != tuple(dq.args[1:]):
        return None
    x, scale, zero, qmin, qmax, dtype = q.args[:6]
    if not isinstance(scale, float) or not isinstance(zero, int) or dq.kwargs or q.kwargs:
        return None
    return x, scale, zero, qmin, qmax, dtype


def _channel_weight(gm, wd):
    """(int8 values, float32 scales) of ``wd`` = dequantize_per_channel of
    constant int8 values along axis 0 with zero points 0, [-128, 127];
    None otherwise."""
    if not _call(wd, _qd.dequantize_per_channel.default):
        return None
    values, scales, zeros = (_attr(gm, a) for a in wd.args[:3])
    axis, qmin, qmax, dtype = wd.args[3:7]
    if (values is None or scales is None or zeros is None or axis != 0 or
            (qmin, qmax, dtype) != (-128, 127, torch.int8) or values.dtype != torch.int8 or
            bool(zeros.ne(0).any())):
        return None
    return values, scales.to(torch.float32)


def _static_input(pair):
    return (pair is not None and pair[3:] == (0, 255, torch.uint8) and 0 <= pair[2] <= 255
            and pair[1] > 0)


def _rewrite_layer(gm, node, count) -> bool:
    """Replaces a conv2d / linear on a static uint8 input and an int8
    per-channel weight by kiln's static int8 call; whether it did."""
    conv = _call(node, torch.ops.aten.conv2d.default)
    if not conv and not _call(node, torch.ops.aten.linear.default):
        return False
    pair, weight = _tensor_pair(node.args[0]), _channel_weight(gm, node.args[1])
    if not _static_input(pair) or weight is None or node.kwargs:
        return False
    values, scales = weight
    bias = node.args[2] if len(node.args) > 2 else None
    if conv:
        defaults = ([1, 1], [0, 0], [1, 1], 1)
        given = list(node.args[3:])  # aten.conv2d's trailing defaults may be left out
        stride, padding, dilation, groups = given + list(defaults[len(given):])
        if isinstance(padding, str) or values.dim() != 4:
            return False
        qweight = values.to(torch.int32)
        scale = scales.reshape(-1, 1, 1, 1)
    else:
        if values.dim() != 2 or values.shape[1] % 4:
            return False
        qweight = values.contiguous().view(torch.int32)
        scale = scales.reshape(-1, 1)
    names = (f"_kiln_qweight_{count}", f"_kiln_weight_scale_{count}")
    gm.register_buffer(names[0], qweight.contiguous())
    gm.register_buffer(names[1], scale.contiguous())
    with gm.graph.inserting_before(node):
        w, s = gm.graph.get_attr(names[0]), gm.graph.get_attr(names[1])
        if conv:
            args = (pair[0], w, s, bias, tuple(stride), tuple(padding), tuple(dilation), groups,
                    pair[1], pair[2])
            new = gm.graph.call_function(_ops.conv2d_static_int8, args)
        else:
            new = gm.graph.call_function(_ops.linear_static_int8,
                                         (pair[0], w, s, bias, pair[1], pair[2]))
    node.replace_all_uses_with(new)
    gm.graph.erase_node(node)
    return True


def from_pt2e(model: fx.GraphModule) -> fx.GraphModule:
    """A copy of a ``convert_pt2e`` model whose static int8 convolutions and
    linears call kiln's int8 layers and whose other quantize/dequantize
    pairs are fake quantizations (see the module doc); run it eagerly (the
    same arithmetic as the original) or ``kiln.compile`` it."""
    if not isinstance(model, fx.GraphModule):
        raise TypeError(f"kiln.quant.from_pt2e: expected the torch.fx.GraphModule convert_pt2e "
                        f"returns, got {type(model).__name__}")
    gm = copy.deepcopy(model)
    count = sum(_rewrite_layer(gm, node, i) for i, node in enumerate(list(gm.graph.nodes)))
    for node in list(gm.graph.nodes):
        pair = _tensor_pair(node)
        if pair is None or pair[5] not in (torch.uint8, torch.int8):
            continue
        x, scale, zero, qmin, qmax, _ = pair
        with gm.graph.inserting_before(node):
            if _static_input(pair):  # the same op pair kiln's int8 layers read as their input
                new = gm.graph.call_function(_ops.quantize_dequantize_static, (x, scale, zero))
            else:
                new = gm.graph.call_function(torch.fake_quantize_per_tensor_affine,
                                             (x, scale, zero, qmin, qmax))
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
    for node in list(gm.graph.nodes):  # torch.export's input check: kiln guards inputs itself
        if node.op == "call_module" and node.target == "_guards_fn" and not node.users:
            gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    gm.kiln_int8_layers = count
    return gm
