# SPDX-License-Identifier: Apache-2.0
"""The coverage command (`python -m kiln.coverage`) reports the C++ op table."""
import json
import re
import subprocess
import sys

import torch
import torch.nn.functional as F

import kiln
from kiln import coverage


def test_table_lists_mapped_functions_and_methods():
    functions, methods = coverage.table()
    assert functions[("torch.nn.functional", "conv2d")] == "conv2d"
    assert functions[("torch", "sin")] == "sin"
    assert ("torch.nn.functional", "conv3d") not in functions
    assert methods["add"] == ("add", True)        # x.add_ is mapped too
    assert methods["reshape"][1] is False         # views have no in-place form


def test_report_splits_each_namespace():
    rep = coverage.report()
    mapped, unmapped = rep["torch.nn.functional"]
    assert "conv2d" in mapped and "scaled_dot_product_attention" in mapped
    assert "conv3d" in unmapped and "grid_sample" in unmapped
    assert not set(mapped) & set(unmapped)
    assert all(callable(getattr(F, n)) for n in mapped + unmapped)
    tmapped, _ = rep["torch.Tensor methods"]
    assert {"sin", "sin_", "argmax", "masked_fill", "add_"} <= set(tmapped)
    ops_mapped, ops_unmapped = rep["torch.Tensor operators"]
    assert "__add__" in ops_mapped and "__and__" in ops_unmapped
    mods, mods_unmapped = rep["torch.nn modules"]
    assert {"Conv2d", "MaxPool2d", "AdaptiveAvgPool2d", "GroupNorm", "Hardswish"} <= set(mods)
    assert {"Conv3d", "LSTM", "Transformer"} <= set(mods_unmapped)
    fn_mapped, _ = rep["torch functions"]
    assert {"sin", "cumsum", "flip", "where"} <= set(fn_mapped)


def test_every_mapped_function_exists_in_torch():
    import importlib
    for module, name, _ in kiln._C.mapped_ops()["functions"]:
        assert callable(getattr(importlib.import_module(module), name)), (module, name)
    for name, _, _ in kiln._C.mapped_ops()["methods"]:
        assert hasattr(torch.Tensor, name), name


def test_command_prints_counts_and_json():
    out = subprocess.run([sys.executable, "-m", "kiln.coverage"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    counts = dict(re.findall(r"^(torch[\w. ]*?)\s+mapped\s+(\d+) /", out, re.M))
    assert set(counts) >= {"torch.nn.functional", "torch.Tensor methods", "torch functions"}
    assert int(counts["torch.nn.functional"]) >= 60
    data = json.loads(subprocess.run([sys.executable, "-m", "kiln.coverage", "--json"], capture_output=True,
                                     text=True, timeout=120, check=True).stdout)
    assert int(counts["torch.nn.functional"]) == len(data["torch.nn.functional"]["mapped"])


def test_each_torch_name_is_registered_once():
    """The op registry records a torch name, Tensor method, operator or op
    registered twice; each must be written once in the mapping layer."""
    raw = kiln._C.mapped_ops()
    assert raw["duplicates"] == []
    names = [(m, n) for m, n, _ in raw["functions"]]
    assert len(names) == len(set(names))
    methods = [n for n, _, _ in raw["methods"]]
    assert len(methods) == len(set(methods))


def test_registry_lists_each_names_schema():
    params = kiln._C.mapped_ops()["params"]
    assert params["torch.add"] == ["input", "other", "alpha"]
    assert params["Tensor.permute"] == ["input", "*dims"]
    assert params["torch.nn.functional.softmax"] == ["input", "dim", "_stacklevel", "dtype"]
    functions, methods = coverage.table()
    assert set(params) == ({f"{m}.{n}" for m, n in functions} | {f"Tensor.{n}" for n in methods})


def test_aliases_map_to_their_base_op():
    functions, methods = coverage.table()
    assert functions[("torch", "multiply")] == "mul"
    assert functions[("torch", "arctan")] == "atan"
    assert methods["swapdims"] == ("swapaxes", False)
