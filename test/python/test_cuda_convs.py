# SPDX-License-Identifier: Apache-2.0
"""Numerics of the CUDA path's slices, concats, gathers, convolutions,
pooling and upsampling without a GPU: each function is compiled on `meta`
(the CUDA dry run builds its launch plan), its kernels are compiled for the
host (cuda_host.py) and the plan runs on CPU tensors against eager. Sizes
are odd on purpose (7x5 images, 3 channels, strides, dilation, groups,
ceil_mode), so an off-by-one offset or stride gives wrong numbers.
Convolutions reach the emitter as kiln-decompose's slices (taps), concats
(zero padding, im2col columns) and GEMMs; pooling as taps combined by
max / add. NVRTC compiles each module for sm_80 and sm_90 as well."""
import copy

import pytest
import torch
import torch.nn.functional as F

import kiln
import kiln.cuda._frontend as frontend
from cuda_helpers import requires_nvrtc
from cuda_host import compile_host, run
from kiln.cuda import nvrtc


def _conv(stride=1, padding=0, dilation=1, groups=1):
    return lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation,
                                    groups=groups)


# name -> (function, input shapes); float32 unless a dtype follows.
CASES = {
    "strided_slice": (lambda x: x[:, 1::2, 2:9:3].relu(), [(3, 8, 11)]),
    "concat_odd": (lambda a, b, c: torch.cat([a, b * 2.0, c], dim=1) + 1.0,
                   [(2, 3, 5), (2, 1, 5), (2, 4, 5)]),
    "concat_reuse": (lambda a: (torch.cat([a, a], 0), a.sum(0)), [(3, 7)]),
    "embedding": (lambda w, i: F.embedding(i, w) * 2.0, [(11, 6), "idx"]),
    "conv3x3_pad": (_conv(padding=1), [(2, 3, 7, 5), (4, 3, 3, 3), (4,)]),
    "conv_stride_dilation": (_conv(stride=2, padding=2, dilation=2),
                             [(1, 3, 9, 7), (5, 3, 3, 3), (5,)]),
    "conv_groups": (_conv(padding=1, groups=2), [(1, 4, 6, 5), (6, 2, 3, 3), (6,)]),
    "conv_depthwise": (_conv(stride=2, padding=1, groups=6), [(2, 6, 7, 9), (6, 1, 3, 3), (6,)]),
    "conv_1x1_stride": (_conv(stride=2), [(2, 5, 7, 7), (3, 5, 1, 1), (3,)]),
    "conv_7x7_stem": (_conv(stride=2, padding=3), [(1, 3, 13, 11), (4, 3, 7, 7), (4,)]),
    "patchify": (_conv(stride=4), [(2, 3, 8, 12), (5, 3, 4, 4), (5,)]),
    "max_pool": (lambda x: F.max_pool2d(x, 3, 2, 1), [(2, 3, 9, 7)]),
    "max_pool_ceil": (lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True), [(1, 2, 7, 5)]),
    "avg_pool": (lambda x: F.avg_pool2d(x, 3, 2, 1), [(1, 3, 7, 8)]),
    "adaptive_avg_1x1": (lambda x: F.adaptive_avg_pool2d(x, 1).flatten(1), [(2, 5, 7, 3)]),
    "upsample_nearest": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
                         [(1, 2, 3, 5)]),
    "sum_middle_axis": (lambda x: x.sum(1) - x.amax(2).unsqueeze(1).mean(), [(3, 7, 5)]),
    "bf16_conv": (_conv(padding=1), [(1, 3, 5, 7), (4, 3, 3, 3), (4,)], torch.bfloat16),
}


def _inputs(shapes, dtype):
    torch.manual_seed(0)
    out = []
    for s in shapes:
        if s == "idx":  # indices into the first input's rows
            out.append(torch.tensor([[0, 10, 3], [7, 7, 1]]))
        else:
            out.append(torch.randn(s).to(dtype))
    return out


def _graph_order(graph, inputs):
    """`inputs` in the graph's argument order (kiln orders a graph's
    inputs by first use), matched by shape and dtype."""
    from kiln.cuda import DTYPES
    left, ordered = list(inputs), []
    for name in graph.inputs:
        b = graph.buffers[name]
        i = next(i for i, t in enumerate(left)
                 if tuple(t.shape) == tuple(b["shape"]) and t.dtype == DTYPES[b["type"]])
        ordered.append(left.pop(i))
    return ordered


def _meta(t):
    return torch.empty(t.shape, dtype=t.dtype, device="meta")


@requires_nvrtc
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_slices_convs_and_pools_match_eager(name, tmp_path):
    fn, shapes, *dtype = CASES[name]
    dtype = dtype[0] if dtype else torch.float32
    inputs = _inputs(shapes, dtype)
    compiled = kiln.compile(fn)
    compiled(*[_meta(t) for t in inputs])  # the CUDA dry run builds the plan
    s = kiln.stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s
    graph = frontend.compiled[-1]
    emitted = {"source": graph.source, "kernels": [k for kind, ks in graph.steps
                                                   if kind == "kernels" for k in ks]}
    for arch in (80, 90):
        binary = nvrtc.compile_source(graph.source, arch)
        assert all(k["name"].encode() in binary for k in emitted["kernels"])
    lib = compile_host(emitted, tmp_path)
    if lib is None:
        pytest.skip("no host C++ compiler")
    got = run(graph, lib, _graph_order(graph, inputs))
    expected = fn(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    tol = {torch.float32: 1e-4, torch.bfloat16: 3e-2}[dtype]
    # Gathers add one result: the 0-d index check flag (0: all in range).
    assert len(got) == len(expected) + (name == "embedding")
    if name == "embedding":
        assert int(got[-1]) == 0
    for g, e in zip(got, expected):
        # A result that is a view of a graph output (flatten) is rebuilt by
        # the frontend from the output: compare the elements.
        torch.testing.assert_close(g.reshape(e.shape), e, rtol=tol, atol=tol)


class SmallCNN(torch.nn.Module):
    """A ResNet/MobileNet-shaped stem on odd sizes: 7x7/2 conv + BN + ReLU,
    3x3/2 max pool, a depthwise and a grouped conv, hardswish, a residual,
    adaptive average pool and a Linear head."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.dw = nn.Conv2d(8, 8, 3, 1, 1, groups=8)
        self.group = nn.Conv2d(8, 8, 3, 1, 1, groups=2)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.group(torch.nn.functional.hardswish(self.dw(x)))
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


@requires_nvrtc
def test_small_cnn_plan_runs_through_fake_cublaslt(tmp_path):
    """The whole CNN as one C++ plan (runtime/cuda/Plan): host-compiled
    kernels and the fake cuBLASLt's column-major GEMMs (test_cuda_plan.py)
    give eager's numbers."""
    from test_cuda_plan import emulate
    torch.manual_seed(0)
    model = SmallCNN().eval()
    with torch.no_grad():
        for p in model.stem[1].parameters():  # non-trivial BN statistics
            p.uniform_(0.5, 1.5)
        model.stem[1].running_mean.uniform_(-0.5, 0.5)
        model.stem[1].running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 23, 19)
    meta_model, meta_x = copy.deepcopy(model).to("meta"), _meta(x)
    # The graph's inputs in its own order: the meta tensors the frontend
    # passes to the dry run, mapped back to the CPU model's by name.
    irs, passed = [], []
    original = frontend.compile_graph

    def recording(ir, device):
        irs.append(ir)
        runner = original(ir, device)
        return lambda *inputs: passed.append(inputs) or runner(*inputs)

    frontend.compile_graph = recording
    try:
        with torch.no_grad():
            kiln.compile(meta_model)(meta_x)
    finally:
        frontend.compile_graph = original
    assert len(irs) == 1 and kiln.stats()["graph_breaks"] == 0
    cpu = {id(meta_x): x}
    for (name, t), (_, m) in zip(list(model.named_parameters()) + list(model.named_buffers()),
                                 list(meta_model.named_parameters())
                                 + list(meta_model.named_buffers())):
        cpu[id(m)] = t
    inputs = [cpu[id(t)] for t in passed[0]]
    with torch.no_grad():
        expected = model(x)
    torch.save({"inputs": inputs, "expected": expected, "ir": irs[0]}, tmp_path / "case.pt")
    out, log = emulate(tmp_path, f"""
        import torch, kiln.cuda
        case = torch.load({str(tmp_path / "case.pt")!r})
        g = kiln.cuda.compile_ir(case["ir"])
        (got,) = g.run_on(case["inputs"], torch.device("cpu"), 0, 0)[:1]
        torch.testing.assert_close(got.reshape(case["expected"].shape), case["expected"],
                                   rtol=1e-4, atol=1e-4)
        print(type(g._executors[(0, False, g.mode)]).__name__, g.executor)
    """, host_ir=irs[0])
    assert out.split() == ["PlanExecutor", "plan"]
    gemms = [line for line in log if line.startswith("gemm")]
    assert len(gemms) >= 3, log  # the 7x7 stem, the grouped conv, the head
