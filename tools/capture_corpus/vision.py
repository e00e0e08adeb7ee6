# SPDX-License-Identifier: Apache-2.0
"""timm/torchvision idioms: drop_path/stochastic depth, residual ``+=``,
ModuleList/ModuleDict loops, Sequential, make_divisible helpers,
squeeze-excitation, channels-last permutes, layer scale, patch embeddings,
feature pyramids returned as dicts."""
from __future__ import annotations

import math
from collections import OrderedDict
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from capture_corpus._case import case, randn


def _img(n):
    return (randn(2, 8, n, n),)


def make_divisible(v, divisor=8, min_value=None, round_limit=0.9):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < round_limit * v:
        new_v += divisor
    return new_v


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0, scale_by_keep=True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)


def stochastic_depth(input, p, mode, training=True):
    """torchvision.ops.stochastic_depth as written upstream."""
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        torch._C._log_api_usage_once(f"torchvision.ops.{stochastic_depth.__name__}")
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ["batch", "row"]:
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = torch.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class ConvBNAct(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1, act_layer=nn.ReLU):
        super().__init__(
            nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout), act_layer(inplace=True))


class SqueezeExcite(nn.Module):
    def __init__(self, chs=8, rd_ratio=0.25, gate_layer=nn.Sigmoid):
        super().__init__()
        rd = make_divisible(chs * rd_ratio, 4)
        self.conv_reduce = nn.Conv2d(chs, rd, 1)
        self.act = nn.ReLU(inplace=True)
        self.conv_expand = nn.Conv2d(rd, chs, 1)
        self.gate = gate_layer()

    def forward(self, x):
        x_se = x.mean((2, 3), keepdim=True)
        x_se = self.act(self.conv_reduce(x_se))
        return x * self.gate(self.conv_expand(x_se))


@case("vision", _img)
class ResidualInplaceAdd(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ConvBNAct(8, 8)

    def forward(self, x):
        shortcut = x
        x = self.conv(x)
        x += shortcut
        return x


@case("vision", _img)
class TorchvisionBasicBlock(nn.Module):
    expansion = 1

    def __init__(self, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(8, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 8, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


@case("vision", _img)
class MBConvStochasticDepth(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(ConvBNAct(8, 16, 1), ConvBNAct(16, 16, groups=16),
                                   SqueezeExcite(16), nn.Conv2d(16, 8, 1))
        self.stochastic_depth_prob = 0.2
        self.use_res_connect = True

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = stochastic_depth(result, self.stochastic_depth_prob, "row", self.training)
            result += input
        return result


@case("vision", _img)
class TimmBlockDropPathEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.drop_path = DropPath(0.1) if 0.1 > 0.0 else nn.Identity()

    def forward(self, x):
        return x + self.drop_path(self.conv(x))


@case("vision", _img, random=True, train=True)
class TimmBlockDropPathTrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.drop_path = DropPath(0.5)

    def forward(self, x):
        return x + self.drop_path(self.conv(x))


@case("vision", _img)
class ModuleListLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([ConvBNAct(8, 8) for _ in range(3)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x) + x
        return x


@case("vision", _img)
class ModuleDictStages(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleDict({"stem": ConvBNAct(8, 8), "s1": ConvBNAct(8, 16, stride=2),
                                     "s2": ConvBNAct(16, 16)})

    def forward(self, x):
        features = {}
        for name, stage in self.stages.items():
            x = stage(x)
            features[name] = x
        return features


@case("vision", _img)
class FeatureListReturn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.Sequential(*[ConvBNAct(8, 8, stride=1) for _ in range(3)])
        self.out_indices = (0, 2)

    def forward(self, x):
        outs = []
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i in self.out_indices:
                outs.append(x)
        return outs


@case("vision", _img)
class SequentialIndexSlice(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(ConvBNAct(8, 8), ConvBNAct(8, 8), ConvBNAct(8, 8))

    def forward(self, x):
        x = self.features[:2](x)
        return self.features[-1](x)


@case("vision", _img)
class SENetModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.se = SqueezeExcite(8, gate_layer=nn.Hardsigmoid)

    def forward(self, x):
        return self.se(x)


@case("vision", _img)
class LayerScaleConvNeXt(nn.Module):
    def __init__(self, dim=8, ls_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(ls_init_value * torch.ones(dim)) if ls_init_value > 0 else None

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
        if self.gamma is not None:
            x = self.gamma * x
        return shortcut + x.permute(0, 3, 1, 2)


@case("vision", _img)
class LayerNorm2d(nn.LayerNorm):
    def __init__(self):
        super().__init__(8)

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


@case("vision", lambda n: (randn(2, 3, 4 * n, 4 * n),))
class PatchEmbed(nn.Module):
    def __init__(self, patch_size=4, embed_dim=16):
        super().__init__()
        self.patch_size = (patch_size, patch_size)
        self.proj = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.flatten = True
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        B, C, H, W = x.shape
        assert H % self.patch_size[0] == 0, f"Input height ({H}) not divisible by patch"
        x = self.proj(x)
        if self.flatten:
            x = x.flatten(2).transpose(1, 2)
        return self.norm(x)


@case("vision", lambda n: (randn(2, n * n, 16),))
class VitClsTokenPosEmbed(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, 16))
        self.pos_embed = nn.Parameter(torch.randn(1, 37, 16) * .02)
        self.pos_drop = nn.Dropout(p=0.0)

    def forward(self, x):
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed[:, : x.shape[1]]
        return self.pos_drop(x)[:, 0]


@case("vision", _img)
def channel_shuffle(x, groups=2):
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups
    x = x.view(batchsize, groups, channels_per_group, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, -1, height, width)


@case("vision", lambda n: (randn(2, 8, 2 * n, 2 * n),))
def window_partition(x, window_size=2):
    B, C, H, W = x.shape
    x = x.permute(0, 2, 3, 1)
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


@case("vision", _img)
def hard_swish_manual(x):
    return x * F.relu6(x + 3.0) / 6.0


@case("vision", _img)
def adaptive_pool_flatten(x):
    x = F.adaptive_avg_pool2d(x, 1)
    return torch.flatten(x, 1)


@case("vision", _img)
class ClassifierHeadDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.drop_rate = 0.2
        self.fc = nn.Linear(8, 10)

    def forward(self, x, pre_logits: bool = False):
        x = self.global_pool(x).flatten(1)
        if self.drop_rate:
            x = F.dropout(x, p=float(self.drop_rate), training=self.training)
        return x if pre_logits else self.fc(x)


@case("vision", _img)
class InvertedResidualExpand(nn.Module):
    def __init__(self, inp=8, oup=8, stride=1, expand_ratio=6):
        super().__init__()
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNAct(inp, hidden_dim, k=1, act_layer=nn.ReLU6))
        layers.extend([ConvBNAct(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim,
                                 act_layer=nn.ReLU6),
                       nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


@case("vision", _img)
class PartialNormLayer(nn.Module):
    def __init__(self):
        super().__init__()
        norm_layer = partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)
        self.conv = nn.Conv2d(8, 8, 1)
        self.bn = norm_layer(8)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


@case("vision", _img, train=True)
class BatchNormTrainStats(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return self.bn(x)


@case("vision", _img)
class OrderedDictSequential(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(OrderedDict([("conv", nn.Conv2d(8, 8, 3, padding=1)),
                                               ("bn", nn.BatchNorm2d(8)), ("act", nn.ReLU())]))

    def forward(self, x):
        return self.body(x) + self.body.conv(x)


@case("vision", _img)
def interpolate_upsample(x):
    y = F.interpolate(x, scale_factor=2, mode="nearest")
    return F.max_pool2d(y, 2) - x


@case("vision", _img)
def interpolate_bilinear_size(x):
    size = [s * 2 for s in x.shape[-2:]]
    return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


@case("vision", _img)
class FPNTopDown(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.ModuleList([nn.Conv2d(8, 8, 1), nn.Conv2d(8, 8, 1)])
        self.down = nn.Conv2d(8, 8, 3, stride=2, padding=1)

    def forward(self, x):
        feats = [x, self.down(x)]
        last = self.inner[-1](feats[-1])
        results = [last]
        for idx in range(len(feats) - 2, -1, -1):
            lateral = self.inner[idx](feats[idx])
            top_down = F.interpolate(last, size=lateral.shape[-2:], mode="nearest")
            last = lateral + top_down
            results.insert(0, last)
        return OrderedDict([(str(i), r) for i, r in enumerate(results)])


@case("vision", _img)
def get_padding_same(x, k=3, s=1, d=1):
    def get_same_padding(x: int, k: int, s: int, d: int):
        return max((math.ceil(x / s) - 1) * s + (k - 1) * d + 1 - x, 0)
    ih, iw = x.size()[-2:]
    pad_h, pad_w = get_same_padding(ih, k, s, d), get_same_padding(iw, k, s, d)
    return F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])


@case("vision", _img)
class MakeDivisibleWidths(nn.Module):
    def __init__(self, width_mult=0.75):
        super().__init__()
        chs = [make_divisible(c * width_mult) for c in (8, 16, 24)]
        self.layers = nn.Sequential(*[nn.Conv2d(a, b, 1) for a, b in zip([8] + chs[:-1], chs)])

    def forward(self, x):
        return self.layers(x)


@case("vision", _img)
class GroupNormAct(nn.GroupNorm):
    def __init__(self):
        super().__init__(2, 8)
        self.act = nn.SiLU()

    def forward(self, x):
        x = F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
        return self.act(x)


@case("vision", _img)
def grid_coords(x):
    B, C, H, W = x.shape
    ys = torch.linspace(-1, 1, H)
    xs = torch.linspace(-1, 1, W)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    grid = torch.stack((gx, gy), -1).unsqueeze(0).expand(B, -1, -1, -1)
    return F.grid_sample(x, grid, align_corners=True)


@case("vision", lambda n: (randn(n, 4) * 10,))
def box_area_iou(boxes):
    boxes = torch.cat([boxes[:, :2], boxes[:, :2] + boxes[:, 2:].abs() + 1], dim=1)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    lt = torch.max(boxes[:, None, :2], boxes[:, :2])
    rb = torch.min(boxes[:, None, 2:], boxes[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area[:, None] + area - inter)


@case("vision", lambda n: (randn(n, 4),))
def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    b = [(x_c - 0.5 * w), (y_c - 0.5 * h), (x_c + 0.5 * w), (y_c + 0.5 * h)]
    return torch.stack(b, dim=-1)


@case("vision", _img)
class ChannelsLastConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        x = x.contiguous(memory_format=torch.channels_last)
        return self.conv(x).mean()


@case("vision", _img)
class NamedChildrenForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(8, 8, 1)
        self.b = nn.ReLU()
        self.c = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        for name, module in self.named_children():
            x = module(x)
        return x


@case("vision", _img)
class ResNetStemMaxPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(8, 8, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def _forward_impl(self, x):
        return self.maxpool(self.relu(self.bn1(self.conv1(x))))

    def forward(self, x):
        return self._forward_impl(x)


@case("vision", _img)
def normalize_image(img, mean=(0.485, 0.456, 0.406, 0.5, 0.5, 0.5, 0.5, 0.5), std=(0.229,) * 8):
    mean = torch.as_tensor(mean, dtype=img.dtype).view(-1, 1, 1)
    std = torch.as_tensor(std, dtype=img.dtype).view(-1, 1, 1)
    return img.sub(mean).div(std)


@case("vision", _img)
def hflip_tta(x):
    return (x + torch.flip(x, dims=[-1])) / 2


@case("vision", _img)
class EfficientNetHead(nn.Module):
    def __init__(self, width_coefficient=1.0, depth_coefficient=1.2):
        super().__init__()
        self.repeats = int(math.ceil(2 * depth_coefficient))
        self.blocks = nn.Sequential(*[InvertedResidualExpand(expand_ratio=2)
                                      for _ in range(self.repeats)])
        self.conv_head = ConvBNAct(8, make_divisible(16 * width_coefficient), 1)

    def forward(self, x):
        return self.conv_head(self.blocks(x)).mean([2, 3])


@case("vision", lambda n: (randn(2, 8, n, n), torch.tensor([0, 3])))
class LinearHeadWithTargets(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 5)

    def forward(self, x, target):
        logits = self.fc(x.mean((-2, -1)))
        return F.cross_entropy(logits, target, label_smoothing=0.1)
