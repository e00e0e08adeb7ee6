# SPDX-License-Identifier: Apache-2.0
"""The graph part of ``kiln.quant.from_torch_ao`` for torch.ao's FX-mode
static quantization (``prepare_fx`` / ``convert_fx``).

A ``convert_fx`` GraphModule holds, besides the quantized modules
``from_torch_ao`` replaces, functional steps on quantized tensors:
``torch.quantize_per_tensor(x, scale, zero_point, dtype)`` calls,
``.dequantize()`` method calls, ``torch.ops.quantized`` ops (``add``,
``add_relu``, ``mul``, ``hardswish``, ``layer_norm``, ``cat`` ... with
their output qparams), and plain torch ops
(``torch.cat``, ``.mean()`` ...) applied to quantized tensors. With each
node's output qparams recorded in the example run (``NodeRecorder``),
``rewrite_graph`` turns quantizations into ``FakeQuantize`` submodules,
drops the dequantizations, computes the quantized arithmetic ops in float
followed by their ``FakeQuantize``, and follows every other op that
returned a quantized tensor (other than ops exact on grid values: ReLU,
max pooling, views) with a ``FakeQuantize`` to the qparams eager gave it.
"""
from __future__ import annotations

import operator

import torch
from torch import fx
import torch.nn.functional as F

_quantized = torch.ops.quantized
# Float versions of the quantized arithmetic ops (their last two arguments
# are the output scale and zero point).
# Float versions of torch.ops.quantized ops with their schemas' argument
# names (the output scale and zero point, and `inplace`, unused: the
# recorded output qparams requantize the result).
def _add(qa, qb, scale=None, zero_point=None):
    return qa + qb


def _mul(qa, qb, scale=None, zero_point=None):
    return qa * qb


def _add_relu(qa, qb, scale=None, zero_point=None):
    return torch.relu(qa + qb)


def _mul_relu(qa, qb, scale=None, zero_point=None):
    return torch.relu(qa * qb)


def _hardswish(input, output_scale, output_zero_point):
    return F.hardswish(input)


def _sigmoid(qx, output_scale, output_zero_point):
    return torch.sigmoid(qx)


def _elu(self, output_scale, output_zero_point, alpha=1, scale=1, input_scale=1):
    return torch.ops.aten.elu(self, alpha, scale, input_scale)


def _celu(self, output_scale, output_zero_point, alpha=1):
    return F.celu(self, alpha)


def _leaky_relu(qx, negative_slope, inplace, output_scale, output_zero_point):
    return F.leaky_relu(qx, negative_slope)


def _relu6(qx, inplace=False):
    return F.relu6(qx)


def _threshold(qx, threshold, value):
    return F.threshold(qx, threshold, value)


def _softmax(qx, dim, output_scale, output_zero_point):
    return torch.softmax(qx, dim)


def _layer_norm(input, normalized_shape, weight, bias, eps, output_scale, output_zero_point):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def _group_norm(input, num_groups, weight, bias, eps, output_scale, output_zero_point):
    return F.group_norm(input, num_groups, weight, bias, eps)


def _instance_norm(input, weight, bias, eps, output_scale, output_zero_point):
    return F.instance_norm(input, None, None, weight, bias, True, 0.0, eps)


def _batch_norm(qx, weight, bias, mean, var, eps, output_scale, output_zero_point):
    return F.batch_norm(qx, mean, var, weight, bias, False, 0.0, eps)


def _cat(qx, dim, scale=None, zero_point=None):
    return torch.cat(qx, dim)


def _matmul(qa, qb, scale, zero_point):
    return torch.matmul(qa, qb)


_FLOAT = {_quantized.add: _add, _quantized.mul: _mul, _quantized.add_relu: _add_relu,
          _quantized.mul_relu: _mul_relu, _quantized.add_scalar: _add,
          _quantized.mul_scalar: _mul, _quantized.hardswish: _hardswish,
          _quantized.sigmoid: _sigmoid, _quantized.elu: _elu, _quantized.celu: _celu,
          _quantized.leaky_relu: _leaky_relu, _quantized.relu6: _relu6,
          _quantized.threshold: _threshold, _quantized.softmax: _softmax,
          _quantized.layer_norm: _layer_norm, _quantized.group_norm: _group_norm,
          _quantized.instance_norm: _instance_norm, _quantized.batch_norm2d: _batch_norm,
          _quantized.cat: _cat, _quantized.matmul: _matmul}
_EXACT_FUNCTIONS = {torch.relu, torch.nn.functional.relu, torch.flatten, torch.reshape,
                    torch.permute, torch.transpose, torch.squeeze, torch.unsqueeze,
                    torch.nn.functional.max_pool2d, operator.getitem}
_EXACT_METHODS = {"relu", "flatten", "reshape", "view", "permute", "transpose", "contiguous",
                  "squeeze", "unsqueeze", "size", "dim"}


class NodeRecorder(fx.Interpreter):
    """Runs a GraphModule recording each node's output qparams by name."""

    def __init__(self, gm: fx.GraphModule, qparams):
        super().__init__(gm)
        self.qparams, self.out = qparams, {}

    def run_node(self, node):
        result = super().run_node(node)
        self.out[node.name] = self.qparams(result)
        return result


def _packet(target):
    """An op overload's packet (torch.ops.quantized.add for .add.Scalar)."""
    return getattr(target, "overloadpacket", target)


def _is_quantized_op(target) -> bool:
    return str(getattr(_packet(target), "_qualified_op_name", "")).startswith("quantized::")


def rewrite_graph(gm: fx.GraphModule, out: dict, fake_quantize) -> None:
    """Rewrites ``gm``'s functional quantized steps in place (module doc);
    ``out`` maps node names to recorded output qparams, ``fake_quantize``
    makes the FakeQuantize module of recorded qparams. A quantized op it
    does not know raises a ValueError naming it."""
    graph = gm.graph
    count = 0

    def add_fake_quantize(after, qparams):
        nonlocal count
        name = f"_kiln_requantize_{count}"
        count += 1
        gm.add_submodule(name, fake_quantize(qparams))
        with graph.inserting_after(after):
            fq = graph.call_module(name, (after,))
        after.replace_all_uses_with(fq, delete_user_cb=lambda user: user is not fq)
        return fq

    for node in list(graph.nodes):
        qparams = out.get(node.name)
        if node.op == "call_function" and node.target is torch.quantize_per_tensor:
            fq = add_fake_quantize(node, qparams)
            fq.args = (node.args[0],)
            graph.erase_node(node)
        elif node.op == "call_method" and node.target == "dequantize":
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
        elif node.op == "call_function" and _packet(node.target) in _FLOAT:
            with graph.inserting_before(node):
                value = graph.call_function(_FLOAT[_packet(node.target)], node.args, node.kwargs)
            node.replace_all_uses_with(value)
            graph.erase_node(node)
            add_fake_quantize(value, qparams)
        elif node.op == "call_function" and _is_quantized_op(node.target):
            raise ValueError(f"kiln.quant.from_torch_ao: {node.name!r} calls {node.target}, "
                             "which kiln does not convert")
        elif node.op in ("call_function", "call_method") and qparams is not None and not (
                node.target in _EXACT_FUNCTIONS if node.op == "call_function"
                else node.target in _EXACT_METHODS):
            add_fake_quantize(node, qparams)
    graph.eliminate_dead_code()
    gm.delete_all_unused_submodules()
    gm.recompile()
