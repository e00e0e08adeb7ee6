# SPDX-License-Identifier: Apache-2.0
"""Plain Python objects held by a module or passed in (HuggingFace's
`self.config`, an options object) are guarded by type while the capture only
reads attributes from them (each read guarded by value), so instances with
equal options share one graph; a changed or differing attribute the forward
reads recompiles; a use that depends on the object itself (`is`, id(), a
dict keyed by it, returning it, mutating it, a builtin evaluated on it) keeps
the identity guard, and every such case gives eager's answer
(capture/interp/PlainObjects.h)."""
import abc

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


class Options:
    def __init__(self, scale=2.0, shift=1.0, tag="a"):
        self.scale = scale
        self.shift = shift
        self.tag = tag
        self.calls = 0

    def __repr__(self):  # reads `tag`, which no forward below reads directly
        return f"Options({self.tag})"


class Scaled(nn.Module):
    def __init__(self, opts):
        super().__init__()
        self.opts = opts
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * self.opts.scale + self.opts.shift


def run_all(models, x):
    with torch.no_grad():
        for m in models:
            assert_close(kiln.compile(m)(x), m(x))


def test_instances_with_equal_options_share_one_graph():
    x = torch.randn(3, 4)
    run_all([Scaled(Options()).eval() for _ in range(12)], x)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["recompiles"] == 0 and s["eager_calls"] == 0, s


def test_differing_or_changed_attribute_recompiles():
    x = torch.randn(3, 4)
    a, b = Scaled(Options()), Scaled(Options(scale=3.0))
    run_all([a, b], x)  # b's scale differs: not a's graph
    assert stats()["graphs_compiled"] == 2, stats()
    a.opts.shift = -5.0  # changed after compiling
    run_all([a], x)
    a.opts = Options(scale=0.5)  # replaced by another object
    run_all([a], x)
    assert stats()["graphs_compiled"] == 4 and stats()["eager_calls"] == 0, stats()


def test_function_argument_objects_share_one_graph():
    def f(x, o):
        return x * o.scale - o.shift

    cf = kiln.compile(f)
    x = torch.randn(5)
    for i in range(10):
        o = Options(scale=2.0 if i < 9 else 4.0)
        assert_close(cf(x, o), f(x, o))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["eager_calls"] == 0, s


DEFAULT = Options()


class IsDefault(Scaled):
    def forward(self, x):
        return x * (2.0 if self.opts is DEFAULT else 3.0)


class ById(Scaled):
    def forward(self, x):
        return x + float(id(self.opts) % 1000)


TABLE = {}


class Keyed(Scaled):
    def forward(self, x):
        return x * TABLE[self.opts]


class Returns(Scaled):
    def forward(self, x):
        return x * self.opts.scale, self.opts


class Counts(Scaled):
    def forward(self, x):
        self.opts.calls += 1
        return x * self.opts.scale


class Formats(Scaled):
    def forward(self, x):
        return x * len(f"{self.opts}")  # Options.__repr__ reads `tag`


class FormatCall(Scaled):
    def forward(self, x):
        return x * len("{}".format(self.opts))


class Equals(Scaled):
    def forward(self, x):
        return x * (2.0 if self.opts == DEFAULT else 3.0)


def compare_each(cls, opts, x):
    with torch.no_grad():
        for o in opts:
            m = cls(o)
            assert_close(kiln.compile(m)(x), m(x))


@pytest.mark.parametrize("cls", [IsDefault, ById, Keyed, Formats, FormatCall, Equals])
def test_identity_uses_keep_identity_guards(cls):
    x = torch.randn(3, 4)
    others = [Options(tag="a" * (i + 1)) for i in range(3)]
    TABLE.clear()
    for i, o in enumerate(others):
        TABLE[o] = float(i + 2)
    compare_each(cls, ([] if cls is Keyed else [DEFAULT]) + others, x)


def test_returned_object_is_the_instance_own():
    x = torch.randn(3, 4)
    with torch.no_grad():
        for o in [Options() for _ in range(3)]:
            m = Returns(o)
            out, got = kiln.compile(m)(x)
            assert got is o  # this instance's object, not the first one's
            assert_close(out, m(x)[0])


def test_mutated_object_is_the_instance_own():
    x = torch.randn(3, 4)
    others = [Options() for _ in range(3)]
    with torch.no_grad():
        for o in others:
            kiln.compile(Counts(o))(x)
    assert [o.calls for o in others] == [1, 1, 1]


def test_none_check_keeps_the_type_guard():
    class MaybeOpts(Scaled):
        def forward(self, x):
            if self.opts is None:
                return x
            return x * self.opts.scale

    x = torch.randn(3, 4)
    run_all([MaybeOpts(Options()) for _ in range(6)], x)
    m = MaybeOpts(None)
    run_all([m], x)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["eager_calls"] == 0, s


def test_kwargs_with_objects_are_guarded_by_structure():
    def f(x, **kw):
        return x * kw["o"].scale + len(kw)

    cf = kiln.compile(f)
    x = torch.randn(4)
    for i in range(10):
        o = Options(scale=2.0)
        assert_close(cf(x, o=o, flag=True), f(x, o=o, flag=True))
    assert stats()["graphs_compiled"] == 1 and stats()["eager_calls"] == 0, stats()
    o = Options(scale=5.0)  # a value the function reads
    assert_close(cf(x, o=o, flag=True), f(x, o=o, flag=True))
    assert_close(cf(x, o=o, flag=True, extra=1), f(x, o=o, flag=True, extra=1))
    assert stats()["graphs_compiled"] == 3 and stats()["eager_calls"] == 0, stats()


def test_returned_object_shares_one_graph():
    # The object is returned as the call's own (read through its source),
    # so the type guard stays: one graph for every instance.
    x = torch.randn(3, 4)
    with torch.no_grad():
        for o in [Options() for _ in range(4)]:
            out, got = kiln.compile(Returns(o))(x)
            assert got is o
    s = stats()
    assert s["graphs_compiled"] == 1 and s["eager_calls"] == 0, s


class Layer:
    def __init__(self):
        self.keys = None
        self.ready = False

    def update(self, k):
        if not self.ready:
            self.keys = k
            self.ready = True
        else:
            self.keys = torch.cat([self.keys, k])
        return self.keys


class AbstractLayer(abc.ABC):
    @abc.abstractmethod
    def update(self, k): ...


class ConcreteLayer(AbstractLayer, Layer):
    update = Layer.update


class Cache:
    """A KV cache in HuggingFace's DynamicCache shape: a list of per-layer
    objects whose tensors the forward replaces."""

    def __init__(self, n, layer=Layer):
        self.layers = [layer() for _ in range(n)]

    def update(self, k, i):
        return self.layers[i].update(k)


def decode(x, cache):
    for i in range(len(cache.layers)):
        x = x + cache.update(x, i).sum()
    return x, cache


@pytest.mark.parametrize("layer", [Layer, ConcreteLayer])  # ABCMeta classes too
def test_new_cache_per_call_shares_the_graphs(layer):
    # A generate() loop builds a new cache per call: the graph stores into
    # the cache's layers (replayed on the call's objects) and returns the
    # cache, by type guards and an aliasing guard, not identity.
    cf = kiln.compile(decode)
    for call in range(3):
        mine, eager = Cache(2, layer), Cache(2, layer)
        x = torch.randn(3)
        for step in range(3):
            got, ret = cf(x, mine)
            want, _ = decode(x, eager)
            assert ret is mine
            assert_close(got, want)
            for a, b in zip(mine.layers, eager.layers):
                assert a.ready and b.ready
                assert_close(a.keys, b.keys)
        s = stats()
        # the first step, the second (static) and the `?` rest, for every call
        assert s["graphs_compiled"] == 3 and s["eager_calls"] == 0, (call, s)


def test_stored_objects_alias_like_eager():
    # `a.val = ...; return b.val`: compiled with a is b, the read after the
    # store is the stored value; called with two objects it must be b's own
    # (and the other way round): the aliasing guard recompiles.
    def f(x, a, b):
        a.val = x * 2
        return x + b.val

    cf = kiln.compile(f)
    x = torch.randn(3)
    for same in (True, False, True, False):
        a, b = Options(), Options()
        a.val, b.val = torch.ones(3), torch.full((3,), 5.0)
        if same:
            b = a
        ea, eb = Options(), Options()
        ea.val, eb.val = torch.ones(3), torch.full((3,), 5.0)
        if same:
            eb = ea
        assert_close(cf(x, a, b), f(x, ea, eb))
        assert_close(a.val, ea.val)
        assert_close(b.val, eb.val)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["eager_calls"] == 0, s


def test_list_of_objects_by_type_and_length_unless_updated():
    def total(x, layers):
        return sum(x * layer.scale for layer in layers)

    cf = kiln.compile(total)
    x = torch.randn(3)
    for n in (2, 2, 2, 3):
        layers = [Options(scale=float(i + 1)) for i in range(n)]
        assert_close(cf(x, layers), total(x, layers))
    s = stats()  # a new list per call shares the graph; a longer one recompiles
    assert s["graphs_compiled"] == 2 and s["eager_calls"] == 0, s

    def grow(x, layers):
        layers.append(Options(scale=3.0))  # the list itself is updated: by identity
        return x * len(layers)

    kiln.reset()
    cg = kiln.compile(grow)
    mine, eager = [Options()], [Options()]
    for _ in range(3):
        assert_close(cg(x, mine), grow(x, eager))
        assert len(mine) == len(eager)
    other = [Options()]
    assert_close(cg(x, other), x * 2)
    assert len(other) == 2 and len(mine) == 4


def _num(v):
    """A number from whatever a list use returns (objects by their `.scale`)."""
    if isinstance(v, (list, tuple)):
        return float(sum(_num(i) for i in v)) + 100 * len(v)
    return v.scale if isinstance(v, Options) else float(v)


# Uses of a caller's list of objects as a whole, or of its items, at capture.
LIST_USES = {
    "in": lambda lst, o: o in lst,
    "index": lambda lst, o: lst.index(o) if o in lst else -1,
    "count": lambda lst, o: lst.count(o),
    "eq": lambda lst, o: lst == [o, o],
    "sorted": lambda lst, o: [p.scale for p in sorted(lst, key=lambda p: p.scale)][0],
    "max": lambda lst, o: max(lst, key=lambda p: p.scale).scale,
    "slice": lambda lst, o: lst[1:],
    "list": lambda lst, o: list(lst),
    "tuple": lambda lst, o: tuple(lst),
    "concat": lambda lst, o: lst + [o],
    "enumerate": lambda lst, o: sum(i * p.scale for i, p in enumerate(lst)),
    "zip": lambda lst, o: sum(p.scale * q.scale for p, q in zip(lst, lst[1:])),
    "reversed": lambda lst, o: [p.scale for p in reversed(lst)][0],
    "len": lambda lst, o: len(lst),
    "bool": lambda lst, o: 1 if lst else 0,
    "last": lambda lst, o: lst[-1].scale,
    "any": lambda lst, o: any(p.scale > 1.5 for p in lst),
    "is_filter": lambda lst, o: len([p for p in lst if p is o]),
    "copy": lambda lst, o: lst.copy(),
    "set": lambda lst, o: len(set(lst)),
    "dict": lambda lst, o: {p: i for i, p in enumerate(lst)}.get(o, -1),
    "first_is": lambda lst, o: lst[0] is o,
}


@pytest.mark.parametrize("use", LIST_USES)
def test_list_of_objects_uses_match_eager(use):
    # A list of plain objects is guarded by type and length: every use that
    # reads more than items through their sources must guard what it read,
    # across new lists, an item replaced, an item's attribute changed and
    # an item appended between calls.
    def f(x, lst, o):
        return x * _num(LIST_USES[use](lst, o))

    cf = kiln.compile(f)
    x = torch.ones(2)
    a, b = Options(scale=1.0), Options(scale=2.0)
    mine = [a, b]
    calls = [(mine, a), ([Options(scale=1.0), Options(scale=2.0)], a),
             ([a, Options(scale=5.0)], a), (mine, b)]
    for lst, o in calls:
        assert_close(cf(x, lst, o), f(x, lst, o))
    mine[0] = Options(scale=3.0)
    assert_close(cf(x, mine, a), f(x, mine, a))
    mine[1].scale = 7.0
    assert_close(cf(x, mine, a), f(x, mine, a))
    mine.append(Options(scale=9.0))
    assert_close(cf(x, mine, a), f(x, mine, a))
    assert stats()["eager_calls"] == 0, stats()


def test_model_output_passed_in_is_read_by_key():
    # generate() passes the encoder's ModelOutput back in on every call: it
    # is guarded by type and keys in order, its items read through their
    # own sources (`out[0]`, `out["k"]`, `len(out)`, attributes).
    mo = pytest.importorskip("transformers.modeling_outputs")

    def f(x, enc):
        h = enc[0] if len(enc) == 1 else enc[0] + enc[1]
        return x + h * 2 + enc["last_hidden_state"] + enc.last_hidden_state

    cf = kiln.compile(f)
    x = torch.randn(2, 3)
    for i in range(4):
        enc = mo.BaseModelOutput(last_hidden_state=torch.randn(2, 3))
        assert_close(cf(x, enc), f(x, enc))
    assert stats()["graphs_compiled"] == 1 and stats()["eager_calls"] == 0, stats()
    both = mo.BaseModelOutput(last_hidden_state=torch.randn(2, 3), hidden_states=torch.randn(2, 3))
    assert_close(cf(x, both), f(x, both))  # other keys: another graph
    assert stats()["graphs_compiled"] == 2, stats()


def test_model_output_used_as_a_whole_or_updated_keeps_identity():
    mo = pytest.importorskip("transformers.modeling_outputs")

    def keys(x, enc):
        return x * len([k for k in enc])

    def update(x, enc):
        enc["last_hidden_state"] = x
        return x + 1

    for fn in (keys, update):
        kiln.reset()
        cf = kiln.compile(fn)
        x = torch.randn(2, 3)
        for _ in range(2):
            mine = mo.BaseModelOutput(last_hidden_state=torch.randn(2, 3))
            eager = mo.BaseModelOutput(last_hidden_state=mine.last_hidden_state.clone())
            assert_close(cf(x, mine), fn(x, eager))
            assert_close(mine.last_hidden_state, eager.last_hidden_state)
            assert_close(mine[0], eager[0])


class Flags:
    def __init__(self):
        self.updated = {}


def test_dict_updated_per_call_shares_the_graphs_by_keys():
    # EncoderDecoderCache's `is_updated[layer] = True`: a new dict per
    # generate() call, updated by the graph. By type and keys in order,
    # under the aliasing guard: a second object with the same keys reuses
    # the graphs; a step whose keys differ compiles its own.
    def step(x, flags, cache):
        for i in range(2):
            if flags.updated.get(i):
                x = x + cache[i]
            else:
                flags.updated[i] = True
                x = x * 2
        return x

    cf = kiln.compile(step)
    x = torch.randn(3)
    cache = [torch.randn(3), torch.randn(3)]
    for call in range(3):
        mine, eager = Flags(), Flags()
        for _ in range(3):
            assert_close(cf(x, mine, cache), step(x, eager, cache))
            assert mine.updated == eager.updated
    s = stats()
    assert s["graphs_compiled"] == 2 and s["eager_calls"] == 0, s
    shared = Flags()  # one dict seen through two objects: not the same graphs
    a, b = Flags(), Flags()
    b.updated = a.updated

    def two(x, a, b):
        a.updated[0] = True
        return x * (2.0 if b.updated.get(0) else 3.0)

    kiln.reset()
    ct = kiln.compile(two)
    for first, second in ((a, b), (shared, Flags()), (Flags(), Flags())):
        e1, e2 = Flags(), Flags()
        if first.updated is second.updated:
            e2.updated = e1.updated
        assert_close(ct(x, first, second), two(x, e1, e2))


RECORD_USES = {
    "to_tuple": lambda x, e: x + sum(e.to_tuple()),
    "keys": lambda x, e: x * len(list(e.keys())),
    "values": lambda x, e: x + sum(v for v in e.values()),
    "items": lambda x, e: x + sum(v * len(k) for k, v in e.items()),
    "get": lambda x, e: x + e.get("last_hidden_state") + (e.get("attentions") or 0),
    "iterate": lambda x, e: x * len([k for k in e]),
    "index": lambda x, e: x + e[0] + e[-1],
}


@pytest.mark.parametrize("use", RECORD_USES)
def test_model_output_methods_on_a_record_passed_in(use):
    # keys/values/items/get (and to_tuple, which calls keys) on a caller's
    # ModelOutput read its items through their sources: no break, eager's
    # values, a record with other keys recompiles.
    mo = pytest.importorskip("transformers.modeling_outputs")
    fn = RECORD_USES[use]
    cf = kiln.compile(fn)
    x = torch.randn(3)
    for i in range(3):
        e = mo.BaseModelOutput(last_hidden_state=torch.randn(3),
                               hidden_states=torch.randn(3) if i == 2 else None)
        assert_close(cf(x, e), fn(x, e))
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0 and s["graphs_compiled"] <= 3, s
