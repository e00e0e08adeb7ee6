# SPDX-License-Identifier: Apache-2.0
"""Fixture of the artifact-models ctest: exports test/python/export_models.py's
MLP, ResNet-like CNN, BERT and GPT-2 blocks and torchvision's resnet18
(random init) to <dir>, each with static shapes and with a dynamic batch --
the blocks a dynamic sequence too --, and
writes for each artifact inputs at several sizes (others than the example's
for dynamic ones) with the JIT path's outputs as .npy files, listed in
<dir>/manifest.txt as `artifact input output` lines for kiln-artifact-models."""
import os
import sys

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "frontend", "python"))
sys.path.insert(0, os.path.join(here, "..", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

import kiln  # noqa: E402
from export_models import CNN, BertBlock, GPT2Block, mlp  # noqa: E402


def _cases():
    """(name, model, example shape, dynamic_shapes, run shapes)."""
    batch = torch.export.Dim("batch", min=2, max=16)
    seq = torch.export.Dim("seq", min=2, max=64)
    blocks = [("bert", BertBlock), ("gpt2", GPT2Block)]
    yield "mlp", mlp(), (8, 64), None, [(8, 64)]
    yield "mlp_dyn", mlp(), (5, 64), ({0: batch},), [(5, 64), (2, 64), (16, 64)]
    yield "cnn", CNN(), (4, 3, 32, 32), None, [(4, 3, 32, 32)]
    yield "cnn_dyn", CNN(), (5, 3, 32, 32), ({0: batch},), [(5, 3, 32, 32), (2, 3, 32, 32),
                                                            (9, 3, 32, 32)]
    # Batch 5 as the example: a batch of 3 would equal the RGB channels and
    # the export would refuse to keep it symbolic.
    yield "resnet18", torchvision.models.resnet18(), (1, 3, 64, 64), None, [(1, 3, 64, 64)]
    yield "resnet18_dyn", torchvision.models.resnet18(), (5, 3, 64, 64), ({0: batch},), [
        (5, 3, 64, 64), (2, 3, 64, 64), (7, 3, 64, 64)]
    for name, make in blocks:
        yield name, make(), (2, 16, 64), None, [(2, 16, 64)]
        yield name + "_dyn", make(), (3, 10, 64), ({0: batch, 1: seq},), [
            (3, 10, 64), (2, 7, 64), (16, 33, 64), (4, 64, 64)]


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    lines = []
    for name, model, example, dims, shapes in _cases():
        model.eval()
        path = os.path.join(out_dir, name + ".kiln")
        kiln.export(model, (torch.randn(example),), path, dynamic_shapes=dims, baseline=False)
        jit = kiln.compile(model)
        for k, shape in enumerate(shapes):
            x = torch.randn(shape)
            if dims:
                kiln.mark_dynamic(x, list(dims[0]))
            with torch.no_grad():
                y = jit(x)
            stem = os.path.join(out_dir, f"{name}_{k}")
            np.save(stem + "_x.npy", x.numpy())
            np.save(stem + "_y.npy", y.numpy())
            lines.append(f"{name}.kiln {name}_{k}_x.npy {name}_{k}_y.npy")
    with open(os.path.join(out_dir, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
