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
          "containers", "scalars", "mutation")


def all_cases() -> list[Case]:
    """Every case of every theme, in theme then definition order."""
    for theme in THEMES:
        importlib.import_module(f"capture_corpus.{theme}")
    return list(registry().values())


__all__ = ["SIZES", "Case", "all_cases", "THEMES"]
