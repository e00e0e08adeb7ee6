# SPDX-License-Identifier: Apache-2.0
"""The graph part of ``kiln.quant.from_torch_ao`` for torch.ao's FX-mode
static quantization (``prepare_fx`` / ``convert_fx``).

A ``convert_fx`` GraphModule holds, besides the quantized modules
``from_torch_ao`` replaces, functional steps on quantized tensors:
``torch.quantize_per_tensor(x, scale, zero_point, dtype)`` calls,
``.dequantize()`` method calls, ``torch.ops.quantized.add`` / ``add_relu``
/ ``mul`` / ``mul_relu`` with their output qparams, and plain torch ops
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

_quantized = torch.ops.quantized
# Float versions of the quantized arithmetic ops (their last two arguments
# are the output scale and zero point).
def add_relu(a, b):
    return torch.relu(a + b)


def mul_relu(a, b):
    return torch.relu(a * b)


_ARITHMETIC = {_quantized.add: operator.add, _quantized.mul: operator.mul,
               _quantized.add_relu: add_relu, _quantized.mul_relu: mul_relu}
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


def _is_quantized_op(target) -> bool:
    packet = getattr(target, "_overloadpacket", target)
    return getattr(packet, "__module__", "") == "torch._ops.quantized" or \
        str(getattr(packet, "_qualified_op_name", "")).startswith("quantized::")


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
        elif node.op == "call_function" and node.target in _ARITHMETIC:
            with graph.inserting_before(node):
                value = graph.call_function(_ARITHMETIC[node.target], tuple(node.args[:2]))
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
