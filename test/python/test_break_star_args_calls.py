# SPDX-License-Identifier: Apache-2.0
"""A graph break inside a method called with `*args`/`**kwargs`
(`obj.method(*args)`: CALL_FUNCTION_EX after PUSH_NULL/LOAD_GLOBAL and
LOAD_ATTR) resumes with the bound method itself on the stack. The break
state used to turn every [NULL, bound method] pair into CPython's
LOAD_METHOD form [function, self], which CALL_FUNCTION_EX does not take:
`'A' object is not callable` (HF BertModel with output_attentions=True
through transformers' `logger.warning_once`, whose body calls
`self.warning(*args, **kwargs)`)."""
import logging

import torch

import kiln


class Recorder:
    def __init__(self, tag):
        self.tag, self.seen = tag, []

    def side(self, msg, *, suffix=""):
        print("side effect", msg)  # breaks the graph
        self.seen.append(msg + suffix)


rec = Recorder("first")


def star_args(x):
    y = x + 1
    rec.side(*("hi",))
    return y * 2


def star_kwargs(x):
    y = x + 1
    rec.side(*("hi",), **{"suffix": "!"})
    return y * 2


def test_method_called_with_star_args_breaks_and_resumes():
    global rec
    x = torch.randn(5)
    f = kiln.compile(star_args)
    torch.testing.assert_close(f(x), star_args(x))
    assert rec.seen == ["hi", "hi"]
    s = kiln.stats()
    assert s["graph_breaks"] >= 1 and s["graphs_compiled"] >= 1, s
    # The method is read per call from its object, as eager does.
    first, rec = rec, Recorder("second")
    torch.testing.assert_close(f(x), star_args(x))
    assert first.seen == ["hi", "hi"] and rec.seen == ["hi", "hi"]


def test_method_called_with_star_kwargs():
    rec.seen.clear()
    x = torch.randn(3, 2)
    torch.testing.assert_close(kiln.compile(star_kwargs)(x), star_kwargs(x))
    assert rec.seen == ["hi!", "hi!"]


def test_logger_warning_with_star_args(caplog):
    log = logging.getLogger("kiln.test.star_args")

    def g(x):
        log.warning(*("message %d", 3))
        return x * 2

    x = torch.randn(4)
    with caplog.at_level(logging.WARNING, logger="kiln.test.star_args"):
        torch.testing.assert_close(kiln.compile(g)(x), x * 2)
    assert [r.getMessage() for r in caplog.records] == ["message 3"]


def test_method_of_an_object_built_in_the_frame():
    """Its object cannot be re-read per call: the frame runs eagerly."""
    def h(x):
        local = Recorder("local")
        local.side(*("x",))
        return x - 1, local.seen

    x = torch.randn(3)
    out, seen = kiln.compile(h)(x)
    torch.testing.assert_close(out, x - 1)
    assert seen == ["x"]


def test_bert_output_attentions_compiles_first():
    """transformers' warning_once (lru_cached: only its first call runs the
    body) is reached first under kiln."""
    from transformers import BertConfig, BertModel
    logging.Logger.warning_once.cache_clear()  # as in a fresh process
    torch.manual_seed(0)
    m = BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                             num_attention_heads=4, intermediate_size=64,
                             attn_implementation="sdpa")).eval()
    ids = torch.randint(0, 100, (2, 8))
    with torch.no_grad():
        got = kiln.compile(m)(ids, output_attentions=True)
        want = m(ids, output_attentions=True)
    torch.testing.assert_close(got.last_hidden_state, want.last_hidden_state,
                               rtol=1e-4, atol=1e-5)
    assert len(got.attentions) == 1
    torch.testing.assert_close(got.attentions[0], want.attentions[0], rtol=1e-4, atol=1e-5)
