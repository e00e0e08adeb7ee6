# SPDX-License-Identifier: Apache-2.0
"""Items of the caller's dict subclasses and mappings read in compiled code
(Interpreter::subscript): a defaultdict/OrderedDict/Counter item is read and
guarded through its own source like a plain dict's, a missing key (whose
__missing__ would run once at capture: a defaultdict inserts) is a break,
and a mapping with a Python __getitem__ (UserDict, ChainMap) is inlined.
These items were constants of the capture: `d[k] += (x,)` kept only the
last call's value (transformers' check_model_inputs collects hidden states
in a defaultdict(tuple): LLaMA with output_hidden_states=True returned 2
of its 3 hidden states)."""
from collections import ChainMap, Counter, OrderedDict, UserDict, defaultdict

import pytest
import torch

import kiln


class MyDict(dict):
    pass


MAKERS = {
    "dict": lambda: {"h": ()},
    "defaultdict(list)": lambda: defaultdict(list),
    "defaultdict(tuple)": lambda: defaultdict(tuple),
    "OrderedDict": lambda: OrderedDict(h=()),
    "defaultdict(int)": lambda: defaultdict(int),
    "Counter": Counter,
    "dict subclass": lambda: MyDict(h=()),
    "UserDict": lambda: UserDict(h=()),
    "ChainMap": lambda: ChainMap({"h": ()}),
}


def _run(kind, compiled):
    d = MAKERS[kind]()

    def f(x):
        if kind == "defaultdict(list)":
            d["h"].append(x)
        elif kind in ("defaultdict(int)", "Counter"):
            d["h"] += 1
        else:
            d["h"] += (x,)
        return x * 2

    g = kiln.compile(f) if compiled else f
    for v in (1.0, 2.0, 3.0):
        torch.testing.assert_close(g(torch.tensor([v])), torch.tensor([2 * v]))
    h = d["h"]
    return h if isinstance(h, int) else [t.item() for t in h]


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_item_updates_per_call(kind):
    assert _run(kind, True) == _run(kind, False)


def test_ordered_dict_len_and_move_to_end():
    def run(compiled):
        d = OrderedDict(a=1, b=2)

        def f(x):
            d.move_to_end("a")
            d[f"k{len(d)}"] = 1
            return x + len(d)

        g = kiln.compile(f) if compiled else f
        outs = [g(torch.zeros(1)).item() for _ in range(3)]
        return outs, list(d.items())

    assert run(True) == run(False)


def test_present_item_is_guarded():
    """A changed item of a defaultdict read as a number recompiles."""
    d = defaultdict(int, scale=2)
    f = kiln.compile(lambda x: x * d["scale"])
    x = torch.ones(2)
    torch.testing.assert_close(f(x), x * 2)
    d["scale"] = 5
    torch.testing.assert_close(f(x), x * 5)


def test_llama_output_hidden_states():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=64)
    model = transformers.LlamaModel(config).eval()
    ids = torch.randint(0, 64, (1, 6))
    with torch.no_grad():
        want = model(ids, output_hidden_states=True)
        got = kiln.compile(model)(ids, output_hidden_states=True)
    assert len(got.hidden_states) == len(want.hidden_states) == 3
    for g, w in zip(got.hidden_states, want.hidden_states):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
