# SPDX-License-Identifier: Apache-2.0
"""A generated corpus of single-op modules calling torch.ops.aten directly.

In the style of torch-mlir's end-to-end suite: one nn.Module per ATen
overload whose ``forward`` is ``return torch.ops.aten.<op>[.<overload>](...)``
(every other module calls the packet, letting torch's overload resolution
pick), over the ATen overloads (core and not) that kiln/_aten_samples.py
can build a valid call for, sampled deterministically, skipping random,
in-place, backward and private non-core ops. Each module runs compiled and eagerly; the
results must match eager in every case, and the share compiled whole by
kiln (no graph break, no per-op fallback) must not go down. ``main()``
prints the rates (``python test/python/test_aten_corpus.py``).
"""
import torch

import kiln
from conftest import assert_close
from kiln import _aten_samples

_SKIP_TAGS = (torch.Tag.nondeterministic_seeded, torch.Tag.inplace_view)


def _eligible(op):
    name = op._schema.name.split("::")[-1]
    if name.endswith("_") or "backward" in name or op._schema.is_mutable:
        return False
    if op._overloadname.startswith("prim_"):  # TorchScript-only overloads
        return False
    if any(t in op.tags for t in _SKIP_TAGS) or any(a.is_out for a in op._schema.arguments):
        return False
    # private overloads outside the core set and batch norms with made-up
    # running statistics can crash eager on schema-built arguments
    if (name.startswith("_") and torch.Tag.core not in op.tags) or "batch_norm" in name:
        return False
    return not name.startswith(("_foreach", "_fused", "quantize", "q_", "mkldnn", "cudnn",
                                "miopen", "_nested", "sparse", "_sparse", "fbgemm", "_cufft",
                                "to_sparse", "_test", "_mps", "empty", "new_empty", "rand",
                                "normal", "bernoulli", "_amp", "_ctc", "_cudnn", "_use",
                                "multilabel_margin"))


def corpus(limit=160, stride=3):
    """[(name, module class, example inputs)] for about ``limit`` overloads."""
    ops = []
    for name in sorted(dir(torch.ops.aten)):
        try:
            packet = getattr(torch.ops.aten, name)
        except Exception:  # noqa: BLE001 - not an operator
            continue
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        ops += [getattr(packet, o) for o in sorted(packet.overloads())]
    picked = [op for op in ops[::stride] if _eligible(op)]
    cases = []
    for i, op in enumerate(picked):
        samples = _aten_samples.samples(op, limit=1)
        if not samples:
            continue
        args, kwargs = samples[0]
        if any(isinstance(v, torch.Tensor) for v in kwargs.values()) or not any(
                isinstance(a, torch.Tensor) for a in args):
            continue
        if any(isinstance(a, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in a)
               for a in args):
            continue
        cases.append(_module(op, args, kwargs, packet_call=i % 2 == 1))
        if len(cases) >= limit:
            break
    return cases


def _module(op, args, kwargs, packet_call):
    params, call = [], []
    inputs = []
    for a in args:
        if isinstance(a, torch.Tensor):
            params.append(f"x{len(inputs)}")
            call.append(params[-1])
            inputs.append(a)
        else:
            call.append(repr(a))
    call += [f"{k}={v!r}" for k, v in kwargs.items()]
    packet = op._schema.name.split("::")[-1]
    target = f"torch.ops.aten.{packet}" + ("" if packet_call else f".{op._overloadname}")
    src = (f"class M(torch.nn.Module):\n    def forward(self, {', '.join(params)}):\n"
           f"        return {target}({', '.join(call)})\n")
    scope = {"torch": torch}
    exec(src, scope)  # noqa: S102
    return str(op), scope["M"], inputs


def _plain(x):
    """Named tuples (torch.return_types, or the ones torch._refs' Python
    kernels return once imported) compared as tuples."""
    if isinstance(x, tuple) and type(x) is not tuple:
        return tuple(x)
    return x


def run_corpus(cases):
    """{'whole': [...], 'fallback': [...], 'break': [...], 'wrong': [...]}"""
    out = {"whole": [], "fallback": [], "break": [], "wrong": []}
    for name, cls, inputs in cases:
        kiln.reset()
        module = cls()
        compiled = kiln.compile(module)
        try:
            with torch.no_grad():
                expected = module(*[t.clone() for t in inputs])
                got = compiled(*[t.clone() for t in inputs])
            assert_close(_plain(got), _plain(expected))
        except Exception as e:  # noqa: BLE001 - recorded
            out["wrong"].append(f"{name}: {type(e).__name__}: {str(e)[:120]}")
            continue
        s = kiln.stats()
        if s["graph_breaks"] or s["eager_calls"] or not s["compiled_calls"]:
            out["break"].append(name)
        elif s["fallback_ops"]:
            out["fallback"].append(name)
        else:
            out["whole"].append(name)
    kiln.reset()
    return out


def test_aten_corpus_whole_graph_rate():
    cases = corpus()
    assert len(cases) >= 100, len(cases)
    res = run_corpus(cases)
    assert not res["wrong"], res["wrong"]
    whole = len(res["whole"]) / len(cases)
    no_break = (len(res["whole"]) + len(res["fallback"])) / len(cases)
    assert whole >= 0.55 and no_break >= 0.9, {k: len(v) for k, v in res.items()}


def main():
    cases = corpus()
    res = run_corpus(cases)
    n = len(cases)
    for k, v in res.items():
        print(f"{k:9s} {len(v):4d} / {n} ({100.0 * len(v) / n:.1f}%)")
    for k in ("break", "fallback", "wrong"):
        print(f"{k}: {' '.join(res[k])}")


if __name__ == "__main__":
    main()
