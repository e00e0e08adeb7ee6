# SPDX-License-Identifier: Apache-2.0
"""Training-loop code: losses, backward, optimizer-free manual SGD steps
under no_grad, grad reads and clipping, gradient accumulation, EMA weight
updates, schedulers as plain Python, metrics with ``.item()``."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from capture_corpus._case import case, randn


def _xy(n):
    return randn(n, 8), torch.randint(0, 3, (n,))


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


@case("training", _xy)
class LossForward(TinyNet):
    def forward(self, x, y):
        return F.cross_entropy(super().forward(x), y)


@case("training", _xy, train=True)
class LossBackwardGradRead(TinyNet):
    def forward(self, x, y):
        loss = F.cross_entropy(super().forward(x), y)
        loss.backward()
        return loss.detach(), self.fc1.weight.grad.clone()


@case("training", _xy, train=True)
class ManualSGDStep(TinyNet):
    def forward(self, x, y, lr=0.1):
        loss = F.cross_entropy(super().forward(x), y)
        loss.backward()
        with torch.no_grad():
            for p in self.parameters():
                p -= lr * p.grad
                p.grad = None
        return loss.detach()


@case("training", _xy, train=True)
class ManualSGDMomentum(TinyNet):
    def __init__(self):
        super().__init__()
        self.momentum = {}

    def forward(self, x, y, lr=0.05, mu=0.9):
        loss = F.cross_entropy(super().forward(x), y)
        grads = torch.autograd.grad(loss, list(self.parameters()))
        with torch.no_grad():
            for (name, p), g in zip(self.named_parameters(), grads):
                buf = self.momentum.get(name)
                buf = g.clone() if buf is None else buf.mul_(mu).add_(g)
                self.momentum[name] = buf
                p.add_(buf, alpha=-lr)
        return loss.detach()


@case("training", lambda n: (randn(n, 8, requires_grad=True),))
def autograd_grad_of_input(x):
    y = (x.sin() * x).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=False)
    return g


@case("training", lambda n: (randn(n, 8, requires_grad=True),))
def grad_penalty(x):
    out = torch.tanh(x @ torch.ones(8, 1))
    g = torch.autograd.grad(out.sum(), x, create_graph=True)[0]
    return ((g.norm(2, dim=1) - 1) ** 2).mean()


@case("training", _xy, train=True)
class ClipGradNorm(TinyNet):
    def forward(self, x, y):
        loss = F.cross_entropy(super().forward(x), y)
        loss.backward()
        total = torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm=0.5)
        return total, self.fc2.weight.grad.clone()


@case("training", _xy, train=True)
class GradNormManual(TinyNet):
    def forward(self, x, y):
        F.cross_entropy(super().forward(x), y).backward()
        norms = [p.grad.detach().norm(2) for p in self.parameters() if p.grad is not None]
        return torch.stack(norms).norm(2)


@case("training", _xy)
class AccuracyItem(TinyNet):
    def forward(self, x, y):
        logits = super().forward(x)
        correct = (logits.argmax(1) == y).sum().item()
        return correct / y.size(0)


@case("training", _xy)
class MetricsDict(TinyNet):
    def forward(self, x, y):
        logits = super().forward(x)
        loss = F.cross_entropy(logits, y)
        metrics = {"loss": loss.item(), "acc": (logits.argmax(-1) == y).float().mean().item()}
        return loss, metrics


@case("training", _xy, train=True)
class GradAccumulation(TinyNet):
    def forward(self, x, y, accum_steps=2):
        total = 0.0
        for xb, yb in zip(x.chunk(accum_steps), y.chunk(accum_steps)):
            loss = F.cross_entropy(super().forward(xb), yb) / accum_steps
            loss.backward()
            total += loss.detach()
        return total, self.fc1.bias.grad.clone()


@case("training", lambda n: (randn(n, 8),))
class EMAUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = TinyNet()
        self.ema = TinyNet()
        self.decay = 0.99

    def forward(self, x):
        with torch.no_grad():
            for ema_v, model_v in zip(self.ema.state_dict().values(),
                                      self.model.state_dict().values()):
                ema_v.copy_(ema_v * self.decay + (1.0 - self.decay) * model_v)
        return self.ema(x)


@case("training", lambda n: (randn(n, 8),))
class EMALerp(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Linear(8, 8)
        self.shadow = nn.Linear(8, 8)

    @torch.no_grad()
    def update(self, decay=0.9):
        for s, p in zip(self.shadow.parameters(), self.model.parameters()):
            s.lerp_(p, 1 - decay)

    def forward(self, x):
        self.update()
        return self.shadow(x)


@case("training", lambda n: (torch.tensor(float(n)),))
def cosine_lr(step, base_lr=0.1, warmup=2, total=10):
    step = int(step)
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * progress))


@case("training", lambda n: (randn(n, 3), randn(n, 3)))
def mse_and_l1(pred, target):
    return F.mse_loss(pred, target) + 0.5 * F.l1_loss(pred, target, reduction="mean")


@case("training", lambda n: (randn(n, 3), torch.rand(n, 3)))
def bce_with_logits(logits, targets):
    pos_weight = torch.ones(3) * 2
    return F.binary_cross_entropy_with_logits(logits, targets, pos_weight=pos_weight)


@case("training", lambda n: (randn(n, 5), torch.randint(0, 5, (n,))))
def focal_loss(logits, targets, alpha=0.25, gamma=2.0):
    ce = F.cross_entropy(logits, targets, reduction="none")
    p_t = torch.exp(-ce)
    return (alpha * (1 - p_t) ** gamma * ce).mean()


@case("training", lambda n: (randn(n, 5), torch.randint(0, 5, (n,))))
def label_smoothing_manual(logits, target, smoothing=0.1):
    logprobs = F.log_softmax(logits, dim=-1)
    nll = -logprobs.gather(dim=-1, index=target.unsqueeze(1)).squeeze(1)
    smooth = -logprobs.mean(dim=-1)
    return ((1.0 - smoothing) * nll + smoothing * smooth).mean()


@case("training", lambda n: (randn(n, 8), randn(n, 8)))
def contrastive_infonce(a, b, temperature=0.07):
    a = F.normalize(a, dim=-1)
    b = F.normalize(b, dim=-1)
    logits = a @ b.t() / temperature
    labels = torch.arange(a.shape[0])
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


@case("training", lambda n: (randn(n, 4),))
def kl_div_distill(student, T=2.0):
    teacher = student.detach() * 0.5
    return F.kl_div(F.log_softmax(student / T, -1), F.softmax(teacher / T, -1),
                    reduction="batchmean") * T * T


@case("training", _xy, train=True)
class ZeroGradSetToNone(TinyNet):
    def forward(self, x, y):
        for p in self.parameters():
            p.grad = None
        loss = F.cross_entropy(super().forward(x), y)
        loss.backward()
        has_grad = all(p.grad is not None for p in self.parameters())
        return loss.detach(), has_grad


@case("training", _xy, train=True)
class FreezeLayer(TinyNet):
    def forward(self, x, y):
        for p in self.fc1.parameters():
            p.requires_grad_(False)
        loss = F.cross_entropy(super().forward(x), y)
        loss.backward()
        return self.fc1.weight.grad is None, self.fc2.weight.grad.sum()


@case("training", lambda n: (randn(n, 8),))
class DetachTargetNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = nn.Linear(8, 8)
        self.target = nn.Linear(8, 8)

    def forward(self, x):
        with torch.no_grad():
            t = self.target(x)
        return F.mse_loss(self.online(x), t.detach())


@case("training", lambda n: (randn(n, 8),))
def no_grad_inference(x):
    w = torch.ones(8, 4, requires_grad=True)
    with torch.no_grad():
        y = x @ w
    return y, y.requires_grad


@case("training", lambda n: (randn(n, 8),))
def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        with torch.enable_grad():
            w = torch.ones(8, requires_grad=True)
            y = (x * w).sum()
    return y.requires_grad, y.detach()


@case("training", lambda n: (randn(n, 8),))
def set_grad_enabled_flag(x, is_train=False):
    with torch.set_grad_enabled(is_train):
        y = x * 2
    return y


@case("training", lambda n: (randn(n, 8),))
def inference_mode_block(x):
    with torch.inference_mode():
        y = x.relu()
    return y


@case("training", _xy, train=True)
class WeightDecayManual(TinyNet):
    def forward(self, x, y, wd=1e-2, lr=0.1):
        loss = F.cross_entropy(super().forward(x), y)
        loss.backward()
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.ndim > 1:
                    p.mul_(1 - lr * wd)
                p.add_(p.grad, alpha=-lr)
        return loss.detach()


@case("training", _xy, train=True)
class AdamStepManual(TinyNet):
    def __init__(self):
        super().__init__()
        self.state = {}
        self.step_count = 0

    def forward(self, x, y, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        loss = F.cross_entropy(super().forward(x), y)
        loss.backward()
        self.step_count += 1
        with torch.no_grad():
            for p in self.parameters():
                st = self.state.setdefault(p, {"m": torch.zeros_like(p), "v": torch.zeros_like(p)})
                st["m"].mul_(b1).add_(p.grad, alpha=1 - b1)
                st["v"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                m_hat = st["m"] / (1 - b1 ** self.step_count)
                v_hat = st["v"] / (1 - b2 ** self.step_count)
                p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
        return loss.detach()


@case("training", lambda n: (randn(n, 8), randn(n, 1)))
def closed_form_ridge(x, y, lam=0.1):
    xtx = x.t() @ x + lam * torch.eye(x.shape[1])
    w = torch.linalg.solve(xtx, x.t() @ y)
    return w, ((x @ w - y) ** 2).mean()


@case("training", lambda n: (randn(n, 8),))
def running_mean_var_update(x, momentum=0.1):
    running_mean = torch.zeros(8)
    running_var = torch.ones(8)
    mean = x.mean(0)
    var = x.var(0, unbiased=True)
    running_mean.mul_(1 - momentum).add_(mean * momentum)
    running_var.mul_(1 - momentum).add_(var * momentum)
    return running_mean, running_var


@case("training", lambda n: (randn(n, 8), torch.randint(0, 3, (n,))))
def nll_with_ignore(x, y):
    logp = x[:, :3].log_softmax(-1)
    y = y.masked_fill(y == 2, -100)
    return F.nll_loss(logp, y, ignore_index=-100)


@case("training", _xy, train=True)
class LossDictBackward(TinyNet):
    def forward(self, x, y):
        out = super().forward(x)
        losses = {"ce": F.cross_entropy(out, y), "l2": 1e-3 * out.pow(2).mean()}
        total = sum(losses.values())
        total.backward()
        return {k: v.item() for k, v in losses.items()}
