# SPDX-License-Identifier: Apache-2.0
"""Sample calls of ATen overloads, built from their schemas.

``samples(op)`` yields ``(args, kwargs)`` for OpOverload ``op``: arguments
made from the schema's types and names (a (3, 4) float tensor for ``self``,
``dim=1``, a kernel of 2 for a pooling window ...), or from ``OVERRIDES``
where the schema says too little (convolutions, pooling, gathers ...), then
variants of the first sample with a 0-d, an empty and a non-contiguous
``self`` and other dtypes. Every sample is run eagerly first and dropped
when eager rejects it, so a sample always states a valid call. Used by
``python -m kiln.coverage --aten --measure`` and test/python/test_aten_core.py.
"""
from __future__ import annotations

import torch

F32 = torch.float32


def _t(*shape, dtype=F32, low=-2.0, high=2.0):
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(0, 5, shape, dtype=dtype)
    return torch.empty(shape, dtype=dtype).uniform_(low, high)


def _int_list(name):
    table = {"dim": [1], "dims": [1], "size": [3, 4], "shape": [3, 4], "kernel_size": [2, 2],
             "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "output_size": [2, 2],
             "output_padding": [0, 0], "pad": [1, 1], "repeats": [2, 1], "split_sizes": [1, 2],
             "normalized_shape": [4], "sizes": [3, 4], "perm": [1, 0], "dim0": [0]}
    return table.get(name, [1])


def _int(name):
    table = {"dim": 1, "dim0": 0, "dim1": 1, "groups": 1, "k": 2, "diagonal": 0, "chunks": 2,
             "index": 1, "start": 0, "end": 2, "step": 1, "length": 2, "split_size": 2,
             "offset": 0, "size": 2, "repeats": 2, "num_classes": 5}
    return table.get(name, 1)


def _float(name):
    return {"eps": 1e-5, "p": 2.0, "momentum": 0.1, "alpha": 0.5, "beta": 0.5}.get(name, 0.5)


def _value(arg, self_t):
    """A value for schema argument ``arg`` (None: leave it to the default)."""
    t = str(arg.type)
    name = arg.name
    if arg.has_default_value() and name not in ("dim",):
        return None
    if t == "Tensor":
        return self_t.clone() if self_t is not None else _t(3, 4)
    if t in ("Tensor?",):
        return None
    if t in ("Tensor[]", "List[Tensor]"):
        return [_t(3, 4), _t(3, 4)]
    if t in ("number", "Scalar"):
        return 0.5
    if t in ("int", "SymInt"):
        return _int(name)
    if t in ("int[]", "SymInt[]", "List[int]", "List[SymInt]") or t.startswith("List[int]"):
        return _int_list(name)
    if t in ("int?", "SymInt?"):
        return _int(name)
    if t in ("int[]?", "List[int]?", "Optional[List[int]]"):
        return _int_list(name)
    if t == "float":
        return _float(name)
    if t == "bool":
        return False
    if t in ("ScalarType", "ScalarType?", "int?") and "dtype" in name:
        return F32
    if t == "str":
        return "none"
    return None


def generic(op):
    """(args, kwargs) for ``op`` from its schema alone."""
    args, kwargs = [], {}
    first = None
    for a in op._schema.arguments:
        v = _value(a, first)
        if v is None:
            if a.has_default_value():
                continue
            v = None
        if first is None and isinstance(v, torch.Tensor):
            first = v
        if a.kwarg_only:
            kwargs[a.name] = v
        else:
            args.append(v)
    return tuple(args), kwargs


def _img(n=1, c=2, h=6, w=6):
    return _t(n, c, h, w)


OVERRIDES = {
    "aten._adaptive_avg_pool2d.default": lambda: ((_img(), [2, 2]), {}),
    "aten._adaptive_avg_pool3d.default": lambda: ((_t(1, 2, 4, 4, 4), [2, 2, 2]), {}),
    "aten._log_softmax.default": lambda: ((_t(3, 4), 1, False), {}),
    "aten._softmax.default": lambda: ((_t(3, 4), 1, False), {}),
    "aten._native_batch_norm_legit_no_training.default": lambda: (
        (_img(), _t(2), _t(2), _t(2), _t(2, low=0.5), 0.1, 1e-5), {}),
    "aten._native_batch_norm_legit.default": lambda: (
        (_img(), _t(2), _t(2), _t(2), _t(2, low=0.5), False, 0.1, 1e-5), {}),
    "aten._native_batch_norm_legit.no_stats": lambda: (
        (_img(), _t(2), _t(2), True, 0.1, 1e-5), {}),
    "aten.native_layer_norm.default": lambda: ((_t(3, 4), [4], _t(4), _t(4), 1e-5), {}),
    "aten.native_group_norm.default": lambda: ((_img(2, 4), _t(4), _t(4), 2, 4, 36, 2, 1e-5), {}),
    "aten._to_copy.default": lambda: ((_t(3, 4),), {"dtype": torch.float64}),
    "aten.addmm.default": lambda: ((_t(4), _t(3, 5), _t(5, 4)), {}),
    "aten.mm.default": lambda: ((_t(3, 5), _t(5, 4)), {}),
    "aten.bmm.default": lambda: ((_t(2, 3, 5), _t(2, 5, 4)), {}),
    "aten.arange.start_step": lambda: ((0, 10, 2), {"dtype": F32}),
    "aten.arange.default": lambda: ((5,), {"dtype": torch.int64}),
    "aten.arange.start": lambda: ((1, 6), {}),
    "aten.avg_pool1d.default": lambda: ((_t(1, 2, 6), [2]), {}),
    "aten.avg_pool2d.default": lambda: ((_img(), [2, 2]), {}),
    "aten.avg_pool3d.default": lambda: ((_t(1, 2, 4, 4, 4), [2, 2, 2]), {}),
    "aten.max_pool2d_with_indices.default": lambda: ((_img(), [2, 2]), {}),
    "aten.max_pool3d_with_indices.default": lambda: ((_t(1, 2, 4, 4, 4), [2, 2, 2]), {}),
    "aten.cat.default": lambda: (([_t(2, 4), _t(3, 4)],), {}),
    "aten.constant_pad_nd.default": lambda: ((_t(3, 4), [1, 2]), {}),
    "aten.convolution.default": lambda: (
        (_img(), _t(3, 2, 3, 3), _t(3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1), {}),
    "aten.embedding.default": lambda: ((_t(10, 4), torch.tensor([[1, 2], [4, 9]])), {}),
    "aten.empty.memory_format": lambda: (([3, 4],), {"dtype": F32}),
    "aten.full.default": lambda: (([3, 4], 1.5), {}),
    "aten.full_like.default": lambda: ((_t(3, 4), 1.5), {}),
    "aten.gather.default": lambda: ((_t(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 1]])), {}),
    "aten.index.Tensor": lambda: ((_t(5, 4), [torch.tensor([0, 3, 4])]), {}),
    "aten.index_put.default": lambda: (
        (_t(5, 4), [torch.tensor([0, 3])], _t(2, 4)), {}),
    "aten.index_select.default": lambda: ((_t(5, 4), 0, torch.tensor([0, 3, 4])), {}),
    "aten.masked_fill.Scalar": lambda: ((_t(3, 4), _t(3, 4, dtype=torch.bool), 0.5), {}),
    "aten.masked_fill.Tensor": lambda: (
        (_t(3, 4), _t(3, 4, dtype=torch.bool), torch.tensor(0.5)), {}),
    "aten.scatter.src": lambda: (
        (_t(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 0]]), _t(3, 2)), {}),
    "aten.scatter.value": lambda: (
        (_t(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 0]]), 0.5), {}),
    "aten.scatter_add.default": lambda: (
        (_t(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 0]]), _t(3, 2)), {}),
    "aten.scatter_reduce.two": lambda: (
        (_t(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 0]]), _t(3, 2), "sum"), {}),
    "aten.select.int": lambda: ((_t(3, 4), 1, 2), {}),
    "aten.select_scatter.default": lambda: ((_t(3, 4), _t(3), 1, 2), {}),
    "aten.slice.Tensor": lambda: ((_t(5, 4), 0, 1, 4, 2), {}),
    "aten.slice_scatter.default": lambda: ((_t(5, 4), _t(2, 4), 0, 1, 4, 2), {}),
    "aten.split_with_sizes.default": lambda: ((_t(3, 4), [1, 3], 1), {}),
    "aten.view.default": lambda: ((_t(3, 4), [4, 3]), {}),
    "aten.expand.default": lambda: ((_t(3, 1), [3, 4]), {}),
    "aten.permute.default": lambda: ((_t(3, 4), [1, 0]), {}),
    "aten.repeat.default": lambda: ((_t(3, 4), [2, 1]), {}),
    "aten.squeeze.dims": lambda: ((_t(3, 1, 4), [1]), {}),
    "aten.unsqueeze.default": lambda: ((_t(3, 4), 1), {}),
    "aten.where.self": lambda: ((_t(3, 4, dtype=torch.bool), _t(3, 4), _t(3, 4)), {}),
    "aten.pow.Scalar": lambda: ((2.0, _t(3, 4)), {}),
    "aten.upsample_nearest2d.vec": lambda: ((_img(), [12, 12], None), {}),
    "aten.upsample_bilinear2d.vec": lambda: ((_img(), [12, 12], False, None), {}),
    "aten.sort.default": lambda: ((_t(3, 4), 1), {}),
    "aten.topk.default": lambda: ((_t(3, 4), 2), {}),
    "aten.var.correction": lambda: ((_t(3, 4), [1]), {"correction": 1}),
    "aten.var.dim": lambda: ((_t(3, 4), [1]), {}),
    "aten.sum.dim_IntList": lambda: ((_t(3, 4), [1]), {}),
    "aten.mean.dim": lambda: ((_t(3, 4), [1]), {}),
    "aten.amax.default": lambda: ((_t(3, 4), [1]), {}),
    "aten.amin.default": lambda: ((_t(3, 4), [1]), {}),
    "aten.cumsum.default": lambda: ((_t(3, 4), 1), {}),
    "aten.diagonal.default": lambda: ((_t(3, 4),), {}),
    "aten.flip.default": lambda: ((_t(3, 4), [0]), {}),
    "aten.roll.default": lambda: ((_t(3, 4), [1], [1]), {}),
    "aten.col2im.default": lambda: ((_t(1, 8, 9), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]), {}),
    "aten.im2col.default": lambda: ((_img(), [2, 2], [1, 1], [0, 0], [1, 1]), {}),
    "aten.reflection_pad1d.default": lambda: ((_t(1, 2, 6), [1, 1]), {}),
    "aten.reflection_pad2d.default": lambda: ((_img(), [1, 1, 1, 1]), {}),
    "aten.reflection_pad3d.default": lambda: ((_t(1, 2, 4, 4, 4), [1, 1, 1, 1, 1, 1]), {}),
    "aten.replication_pad2d.default": lambda: ((_img(), [1, 1, 1, 1]), {}),
    "aten.replication_pad3d.default": lambda: ((_t(1, 2, 4, 4, 4), [1, 1, 1, 1, 1, 1]), {}),
    "aten.grid_sampler_2d.default": lambda: ((_img(), _t(1, 3, 3, 2, low=-1, high=1), 0, 0,
                                              False), {}),
    "aten.bitwise_and.Tensor": lambda: ((_t(3, 4, dtype=torch.int64),
                                         _t(3, 4, dtype=torch.int64)), {}),
    "aten.bitwise_or.Tensor": lambda: ((_t(3, 4, dtype=torch.int64),
                                        _t(3, 4, dtype=torch.int64)), {}),
    "aten.bitwise_xor.Tensor": lambda: ((_t(3, 4, dtype=torch.int64),
                                         _t(3, 4, dtype=torch.int64)), {}),
    "aten.bitwise_and.Scalar": lambda: ((_t(3, 4, dtype=torch.int64), 3), {}),
    "aten.bitwise_or.Scalar": lambda: ((_t(3, 4, dtype=torch.int64), 3), {}),
    "aten.bitwise_xor.Scalar": lambda: ((_t(3, 4, dtype=torch.int64), 3), {}),
    "aten.bitwise_not.default": lambda: ((_t(3, 4, dtype=torch.int64),), {}),
    "aten.logical_not.default": lambda: ((_t(3, 4, dtype=torch.bool),), {}),
    "aten.remainder.Scalar": lambda: ((_t(3, 4), 0.7), {}),
    "aten.fmod.Scalar": lambda: ((_t(3, 4), 0.7), {}),
    "aten.sym_size.int": lambda: ((_t(3, 4), 1), {}),
    "aten.sym_stride.int": lambda: ((_t(3, 4), 1), {}),
    "aten.scalar_tensor.default": lambda: ((1.5,), {}),
    "aten.embedding_dense_backward.default": lambda: (
        (_t(2, 2, 4), torch.tensor([[1, 2], [4, 9]]), 10, -1, False), {}),
    "aten._cdist_forward.default": lambda: ((_t(3, 4), _t(5, 4), 2.0, None), {}),
    "aten._pdist_forward.default": lambda: ((_t(3, 4), 2.0), {}),
    "aten.copy.default": lambda: ((_t(3, 4), _t(1, 4)), {}),
    "aten.empty_strided.default": lambda: (([3, 4], [4, 1]), {}),
    "aten.as_strided.default": lambda: ((_t(3, 4), [2, 2], [1, 2]), {}),
    "aten.clamp.Tensor": lambda: ((_t(3, 4), _t(3, 4, low=-1, high=0)), {}),
    "aten.native_dropout.default": lambda: ((_t(3, 4), 0.5, False), {}),
    "aten.max.dim": lambda: ((_t(3, 4), 1), {}),
    "aten.min.dim": lambda: ((_t(3, 4), 1), {}),
    "aten.fill.Scalar": lambda: ((_t(3, 4), 1.5), {}),
    "aten.hardtanh.default": lambda: ((_t(3, 4),), {}),
    "aten.leaky_relu.default": lambda: ((_t(3, 4),), {}),
    "aten.elu.default": lambda: ((_t(3, 4),), {}),
    "aten.gelu.default": lambda: ((_t(3, 4),), {}),
    "aten.log.default": lambda: ((_t(3, 4, low=0.1),), {}),
    "aten.sqrt.default": lambda: ((_t(3, 4, low=0.1),), {}),
    "aten.rsqrt.default": lambda: ((_t(3, 4, low=0.1),), {}),
    "aten.log10.default": lambda: ((_t(3, 4, low=0.1),), {}),
    "aten.log2.default": lambda: ((_t(3, 4, low=0.1),), {}),
    "aten.log1p.default": lambda: ((_t(3, 4, low=0.1),), {}),
    "aten.acosh.default": lambda: ((_t(3, 4, low=1.1, high=3),), {}),
    "aten.acos.default": lambda: ((_t(3, 4, low=-0.9, high=0.9),), {}),
    "aten.asin.default": lambda: ((_t(3, 4, low=-0.9, high=0.9),), {}),
    "aten.atanh.default": lambda: ((_t(3, 4, low=-0.9, high=0.9),), {}),
    "aten.pow.Tensor_Tensor": lambda: ((_t(3, 4, low=0.1), _t(3, 4)), {}),
    "aten.pow.Tensor_Scalar": lambda: ((_t(3, 4), 2), {}),
    "aten.clamp.default": lambda: ((_t(3, 4), -0.5, 0.5), {}),
    "aten.masked_scatter.default": lambda: (
        (_t(3, 4), _t(3, 4, dtype=torch.bool), _t(3, 4)), {}),
    "aten._adaptive_avg_pool2d_backward.default": lambda: ((_t(1, 2, 2, 2), _img()), {}),
    "aten.avg_pool2d_backward.default": lambda: (
        (_t(1, 2, 3, 3), _img(), [2, 2], [2, 2], [0, 0], False, True, None), {}),
    "aten.max_pool2d_with_indices_backward.default": lambda: _max_pool_backward(),
    "aten.convolution_backward.default": lambda: (
        (_t(1, 3, 6, 6), _img(), _t(3, 2, 3, 3), [3], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
         [True, True, True]), {}),
    "aten._embedding_bag.default": lambda: (
        (_t(10, 4), torch.tensor([1, 2, 4, 9]), torch.tensor([0, 2])), {}),
}


def _max_pool_backward():
    x = _img()
    _, indices = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
    return (_t(1, 2, 3, 3), x, [2, 2], [2, 2], [0, 0], [1, 1], False, indices), {}


def first_sample(op):
    key = str(op)
    make = OVERRIDES.get(key)
    return make() if make is not None else generic(op)


def _variants(args, kwargs):
    """The first sample, then 0-d / empty / non-contiguous / float64 forms
    of its first tensor when it is an elementwise-looking (3, 4) input."""
    yield args, kwargs
    if not args or not isinstance(args[0], torch.Tensor) or args[0].shape != (3, 4):
        return
    same = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.shape == (3, 4)]

    # an ``out=`` tensor follows the inputs (eager's resizing of a mismatched
    # one is deprecated)
    outs = [k for k, v in kwargs.items()
            if k == "out" and isinstance(v, torch.Tensor) and v.shape == (3, 4)]

    def replace(fn):
        out = list(args)
        for i in same:
            out[i] = fn(args[i])
        return tuple(out), {**kwargs, **{k: fn(kwargs[k]) for k in outs}}

    yield replace(lambda t: t.t().contiguous().t())  # non-contiguous (4, 3)^T
    yield replace(lambda t: t[1:2, 2:3].reshape(()))  # 0-d
    yield replace(lambda t: t[:0])  # empty
    yield replace(lambda t: t.double() if t.is_floating_point() else t)


def samples(op, limit=5):
    """Valid (args, kwargs) calls of ``op`` (eager accepted each)."""
    torch.manual_seed(0)
    try:
        base = first_sample(op)
    except Exception:  # noqa: BLE001 - a schema the generator cannot fill
        return []
    out = []
    for args, kwargs in _variants(*base):
        # each tensor its own storage (a view's base would be read by as_strided)
        args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
        kwargs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        try:
            with torch.no_grad():
                op(*args, **kwargs)
        except Exception:  # noqa: BLE001 - eager rejects it: not a sample
            continue
        out.append((args, kwargs))
        if len(out) >= limit:
            break
    return out


def core_overloads():
    """Every OpOverload of torch.ops.aten tagged ``torch.Tag.core``, sorted."""
    found = []
    for name in dir(torch.ops.aten):
        try:
            packet = getattr(torch.ops.aten, name)
        except Exception:  # noqa: BLE001 - not an operator
            continue
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if torch.Tag.core in op.tags:
                found.append(op)
    return sorted(found, key=str)
