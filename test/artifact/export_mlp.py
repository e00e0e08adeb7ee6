# SPDX-License-Identifier: Apache-2.0
"""Fixture of the artifact ctest (test/artifact/CMakeLists.txt): exports a
small MLP (784-128-10, random init, batch 8) to <dir>/mlp.kiln and writes
the input and the JIT path's output as .npy files beside it; where kiln has
NVRTC, also mlp_cuda.kiln with a CUDA build."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "frontend", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import kiln  # noqa: E402


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)).eval()
    x = torch.randn(8, 784)
    kiln.export(model, (x,), os.path.join(out_dir, "mlp.kiln"))
    from kiln import _C
    if _C.nvrtc_available():  # the CUDA build too, for the CUDA fuzz
        kiln.export(model, (x,), os.path.join(out_dir, "mlp_cuda.kiln"), baseline=False,
                    target=["cpu", "cuda:sm_80,sm_90"])
    with torch.no_grad():
        y = kiln.compile(model)(x)
    np.save(os.path.join(out_dir, "x.npy"), x.numpy())
    np.save(os.path.join(out_dir, "y.npy"), y.numpy())


if __name__ == "__main__":
    main(sys.argv[1])
