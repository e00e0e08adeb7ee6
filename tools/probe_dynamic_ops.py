# SPDX-License-Identifier: Apache-2.0
"""Probe of kiln's dynamic shapes per op and pattern: each case is called
under kiln.compile(dynamic=None) at 4 sizes (all >= 2; the first change
marks the dim dynamic), compared with eager, and reported as `one ?` (one
static graph + one `?` graph serve every size) or `specialized` (a graph
per size). CNN batches are called at 7 sizes: a frame's first 4 graphs
keep convolution batches static, then one `?` graph serves the rest
(`4 static + ?`). Run with KILN_LOGS=dynamic to see each specialization's
reason.
Usage: python tools/probe_dynamic_ops.py [case-substring ...]"""
import sys

import torch
import torch.nn.functional as F
from torch import nn

import kiln

torch.manual_seed(0)
LIN = nn.Linear(16, 16).eval()
LN = nn.LayerNorm(16).eval()
CONV = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                     nn.Flatten(), nn.Linear(8, 4)).eval()
BN = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2)).eval()


def seq(s):  # [2, s, 16]: a sequence length
    return (torch.randn(2, s, 16),)


def batch(s):  # [s, 16]
    return (torch.randn(s, 16),)


def img(s):  # [s, 3, 12, 12]: a CNN batch
    return (torch.randn(s, 3, 12, 12),)


def mask_seq(s):  # hidden states and a 0/1 attention mask
    m = torch.ones(2, s)
    m[0, s // 2:] = 0
    return torch.randn(2, s, 16), m


def attn(x, m):
    q = x.view(x.shape[0], x.shape[1], 4, 4).transpose(1, 2)
    ext = (1.0 - m[:, None, None, :]) * torch.finfo(x.dtype).min
    w = torch.softmax(q @ q.transpose(-1, -2) / 2.0 + ext, -1)
    return (w @ q).transpose(1, 2).reshape(x.shape[0], x.shape[1], 16)


CASES = {
    # slices of the symbolic dim
    "slice [:, 1:-1]": (lambda x: x[:, 1:-1] * 2, seq),
    "slice [:, 1:]": (lambda x: x[:, 1:] * 2, seq),
    "slice [:, :-1]": (lambda x: x[:, :-1] * 2, seq),
    "slice [:, -1]": (lambda x: x[:, -1] * 2, seq),
    "slice [:, ::2]": (lambda x: x[:, ::2] * 2, seq),
    "slice [..., ::2] (seq last)": (lambda x: x.transpose(1, 2)[..., ::2] * 2, seq),
    "slice [:, 1::2]": (lambda x: x[:, 1::2] * 2, seq),
    "narrow(1, 1, s-2)": (lambda x: x.narrow(1, 1, x.shape[1] - 2) * 2, seq),
    "shift logits x[:, :-1] - y[:, 1:]": (lambda x: x[:, :-1] - x[:, 1:], seq),
    "cls x[:, 0]": (lambda x: x[:, 0] * 2, seq),
    # reductions over the symbolic dim
    "mean(1)": (lambda x: x.mean(1), seq),
    "sum(1)": (lambda x: x.sum(1), seq),
    "amax(1)": (lambda x: x.amax(1), seq),
    "softmax(1)": (lambda x: torch.softmax(x, 1), seq),
    "mean(-1) batch": (lambda x: x.mean(0), batch),
    "masked mean pool": (lambda x, m: (x * m[..., None]).sum(1) / m.sum(1, keepdim=True),
                         mask_seq),
    "layer_norm over seq [2,s,16]": (lambda x: LN(x), seq),
    "layer_norm F (normalized s)": (lambda x: F.layer_norm(x.transpose(1, 2),
                                                           (x.shape[1],)), seq),
    "var(1)": (lambda x: x.var(1), seq),
    "std/mean seq": (lambda x: (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True), seq),
    # reshapes
    "view(b, s, 4, 4) heads": (lambda x: x.view(x.shape[0], x.shape[1], 4, 4).sum(-1), seq),
    "view(b*s, 16) -> linear -> view": (
        lambda x: LIN(x.view(-1, 16)).view(x.shape[0], x.shape[1], 16), seq),
    "view(-1, s*16)": (lambda x: x.reshape(x.shape[0], -1), seq),
    "attention + mask": (attn, mask_seq),
    # CNN batch
    "conv net batch": (lambda x: CONV(x), img),
    "conv bn pool batch": (lambda x: BN(x), img),
    "flatten conv batch": (lambda x: torch.flatten(BN(x), 1), img),
    # fallback segments
    "fallback op + symbolic": (lambda x: torch.special.i1(x) + x, batch),
}

SIZES = [4, 6, 9, 12]
CONV_SIZES = [4, 6, 9, 12, 7, 11, 13]  # not 5: the pooled maps are 5x5 (stays static)


def probe(name, fn, make):
    kiln.reset()
    cf = kiln.compile(fn)
    torch.manual_seed(1)
    conv = make is img
    for s in CONV_SIZES if conv else SIZES:
        args = make(s)
        with torch.no_grad():
            torch.testing.assert_close(cf(*args), fn(*args), rtol=1e-4, atol=1e-5)
    st = kiln.stats()
    one = (st["graphs_compiled"] == (5 if conv else 2) and st["dynamic_graphs"] >= 1
           and st["eager_calls"] == 0)
    label = ("4 static + ?" if conv else "one ?") if one else "specialized"
    return (label, st["graphs_compiled"], st["recompiles"],
            st["dynamic_graphs"], st["dynamic_specialized"], st["eager_calls"],
            st["graph_breaks"])


def main(args):
    print(f"{'case':40} {'result':12} graphs recomp dyn dynspec eager breaks  (sizes {SIZES}, CNNs {CONV_SIZES})")
    for name, (fn, make) in CASES.items():
        if args and not any(a in name for a in args):
            continue
        try:
            row = probe(name, fn, make)
        except Exception as e:  # report and go on
            row = ("ERROR " + type(e).__name__ + ": " + str(e).splitlines()[0][:60],)
        print(f"{name:40} {row[0]:12}", *row[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
