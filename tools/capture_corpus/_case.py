# SPDX-License-Identifier: Apache-2.0
"""The case record of the capture-coverage corpus and its registry.

A case is a small callable written the way real model code is written (a
function, or an nn.Module class built fresh per system), a factory of its
inputs for two shapes (``inputs(n)`` with n in SIZES, so every case is
called at two shapes), a unique name and a theme tag. Decorate a function
or an nn.Module subclass with ``@case(theme, inputs)``; the registry is
filled when the theme modules are imported (capture_corpus.all_cases()).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

# The two sizes each case is called with (the second exercises a new shape).
SIZES = (4, 6)

_REGISTRY: dict[str, "Case"] = {}


@dataclass
class Case:
    """One corpus entry. ``make()`` returns the callable (for a module
    class, a fresh instance built under a fixed seed); ``inputs(n)`` the
    positional arguments for size n; ``kwargs(n)`` keyword arguments;
    ``random``: the result is compared by structure, shape, dtype and
    moments, not values; ``after()``: extra state (a global, a counter)
    compared after the calls; ``setup()`` resets that state before them;
    ``before(target, n)``: changes the program's state before the call at
    size n (what a real program does between two calls: eval(), a flag, a
    monkeypatch), so that stale compiled code shows."""
    name: str
    theme: str
    target: object
    inputs: Callable
    kwargs: Callable | None = None
    random: bool = False
    after: Callable | None = None
    setup: Callable | None = None
    train: bool = False
    before: Callable | None = None

    def make(self):
        """A fresh callable: modules are constructed under seed 0."""
        if self.setup is not None:
            self.setup()
        if isinstance(self.target, type) and issubclass(self.target, torch.nn.Module):
            torch.manual_seed(0)
            module = self.target()
            module.train(self.train)
            return module
        return self.target

    def args(self, n: int) -> tuple[tuple, dict]:
        """The inputs for size n, drawn under a seed fixed by n."""
        torch.manual_seed(1000 + n)
        args = self.inputs(n)
        kwargs = self.kwargs(n) if self.kwargs is not None else {}
        return tuple(args), kwargs


def case(theme: str, inputs: Callable, **options):
    """Registers the decorated function or module class as a corpus case."""
    def register(target):
        name = f"{theme}.{target.__name__}"
        if name in _REGISTRY:
            raise ValueError(f"duplicate corpus case {name}")
        _REGISTRY[name] = Case(name, theme, target, inputs, **options)
        return target
    return register


def registry() -> dict[str, Case]:
    """Every registered case by name."""
    return _REGISTRY


def randn(*shape, **options):
    """Shorthand for the inputs factories (torch.randn)."""
    return torch.randn(*shape, **options)
