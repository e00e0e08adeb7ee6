# SPDX-License-Identifier: Apache-2.0
"""Small random-init models of test_export.py and tools/bench_export.py: an
MLP, a ResNet-18-like CNN (two residual stages, 32x32 images) and BERT /
GPT-2 style transformer blocks (hidden 64, 4 heads)."""
import math

import torch
from torch import nn
from torch.nn import functional as F


class MLP(nn.Module):
    def __init__(self, d_in=64, hidden=128, d_out=10):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, hidden), nn.Linear(hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def mlp():
    return MLP()


class BasicBlock(nn.Module):
    """ResNet-18's residual block."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                      nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class CNN(nn.Module):
    """ResNet-18's layout at small width and depth: stem, two stages, pool, fc."""

    def __init__(self, width=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU())
        self.layer1 = BasicBlock(width, width, 1)
        self.layer2 = BasicBlock(width, 2 * width, 2)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Attention(nn.Module):
    """Multi-head attention; `fused_qkv=False`: three projections instead of
    one split (the CUDA emitter has no slices yet: test_export_cuda.py)."""

    def __init__(self, d=64, heads=4, causal=False, fused_qkv=True):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.out = nn.Linear(d, d)
        if fused_qkv:
            self.qkv = nn.Linear(d, 3 * d)
        else:
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        if hasattr(self, "qkv"):
            q, k, v = self.qkv(x).split(d, dim=-1)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class BertBlock(nn.Module):
    """Post-norm encoder layer (BERT): attention, add & norm, GELU MLP, add & norm."""

    def __init__(self, d=64, heads=4, fused_qkv=True):
        super().__init__()
        self.attn = Attention(d, heads, fused_qkv=fused_qkv)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class GPT2Block(nn.Module):
    """Pre-norm decoder layer (GPT-2): causal attention, tanh-GELU MLP."""

    def __init__(self, d=64, heads=4, fused_qkv=True):
        super().__init__()
        self.attn = Attention(d, heads, causal=True, fused_qkv=fused_qkv)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
