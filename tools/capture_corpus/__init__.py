# SPDX-License-Identifier: Apache-2.0
"""capture_corpus: functions and modules in the styles of real model code,
by theme, for tools/capture_coverage.py (kiln vs Dynamo vs eager).

``all_cases()`` imports every theme module and returns the cases in a
stable order; ``SAMPLE`` names the fixed subset the pytest runs.
"""
from __future__ import annotations

import importlib

from capture_corpus._case import SIZES, Case, registry

THEMES = ("hf", "vision", "training", "control", "objects", "functional", "iteration",
          "containers", "scalars", "mutation", "changes")


# The fixed sample test/python/test_capture_corpus.py runs through kiln
# (about 3 per theme, fast ones, and the cases whose wrong results were
# fixed in kiln).
SAMPLE = (
    "hf.repeat_kv", "hf.greedy_next_token", "hf.invert_mask_min_value", "hf.longformer_chunk",
    "vision.window_partition", "vision.channel_shuffle", "vision.BatchNormTrainStats",
    "training.mse_and_l1", "training.cosine_lr", "training.autograd_grad_of_input",
    "control.shape_arith_reshape", "control.transpose_3d_t_error", "control.branch_on_sum",
    "objects.object_identity_checks", "objects.tensor_subclass_parameter",
    "objects.methods_build_new_instances", "functional.try_except_keyerror",
    "functional.reduce_sum_of_list", "functional.global_list_mutation",
    "iteration.itertools_chain", "iteration.iterate_tensor_rows", "iteration.generator_next_step",
    "containers.dict_update_setdefault", "containers.set_of_tensors_by_identity",
    "containers.list_sort_reverse", "scalars.numpy_roundtrip", "scalars.stride_and_offset",
    "scalars.dropout_functional_training", "mutation.iadd_input", "mutation.zero_input",
    "mutation.view_of_input_mutated", "scalars.item_in_arithmetic",
    "scalars.int_float_bool_of_tensor", "scalars.item_then_branch",
)


def all_cases() -> list[Case]:
    """Every case of every theme, in theme then definition order."""
    for theme in THEMES:
        importlib.import_module(f"capture_corpus.{theme}")
    return list(registry().values())


__all__ = ["SIZES", "SAMPLE", "Case", "all_cases", "THEMES"]
