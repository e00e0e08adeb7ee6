# SPDX-License-Identifier: Apache-2.0
"""Python containers inside the compiled code
(frontend/csrc/capture/interp/ContainerMethods.cpp): list/dict/set methods
on containers built in the frame, `del` of items and slices, slice
assignment, dict `|`/`|=`, OrderedDict methods, set literals and
comprehensions, `a, *rest = t`, containers made at capture time
(`list(x.shape)`) mutated on the object, the caller's dict popped (replayed
after the graph). Each case compares with eager and asserts kiln.stats();
what cannot be kept exact (sorting tensors, mutating the caller's list in
ways kiln does not replay) breaks."""
import collections

import torch

import kiln
import conftest
from conftest import assert_close, stats


def flat(v):
    """Dicts and sets as (type, keys, values) tuples, for assert_close."""
    if isinstance(v, dict):
        return (type(v).__name__, list(v), [flat(i) for i in v.values()])
    if isinstance(v, (set, frozenset)):
        return (type(v).__name__, sorted(v))
    if isinstance(v, (tuple, list)):
        return type(v)(flat(i) for i in v)
    return v


def whole_graph(fn, *args, calls=2):
    return conftest.whole_graph(fn, *args, calls=calls,
                                compare=lambda got, expected: assert_close(flat(got), flat(expected)))


def breaks(fn, *args):
    """Runs `fn` compiled against eager; returns the stats (some break)."""
    got, expected = kiln.compile(fn)(*args), fn(*args)
    assert_close(got, expected)
    s = stats()
    assert s["graph_breaks"] >= 1, s
    return s


def test_list_methods_on_lists_built_in_the_frame():
    def f(x):
        names = ["a", "b", "c", "b"]
        vals = [3, 1, 2]
        vals.sort(reverse=True)
        vals.reverse()
        words = ["bb", "a", "ccc"]
        words.sort(key=len, reverse=True)
        nums = [1, 2, 1, 3]
        nums.remove(1)
        return x[:, vals] * names.index("c") + names.count("b"), words, nums, nums.index(3)

    whole_graph(f, torch.randn(4, 8))


def test_list_copy_insert_extend_del_and_slices():
    def f(x):
        a = [x, x + 1]
        b = a.copy()
        b.append(x + 2)
        items = [x]
        items.insert(0, x + 1)
        items.extend([x - 1, x * 0])
        del items[1]
        parts = [x[i] for i in range(4)]
        parts[1:3] = [parts[2], parts[1]]
        parts[::2] = [parts[0] * 2, parts[2] * 3]
        parts[1:1] = [x[0]]
        rest = [x, x + 1, x + 2, x + 3]
        del rest[::2]
        return len(a), len(b), torch.stack(items), torch.stack(parts), rest

    whole_graph(f, torch.randn(4, 8))


def test_list_inplace_operators_keep_aliases():
    def f(x):
        a = [x]
        b = a
        a += [x * 2]
        c = [1]
        d = c
        c *= 3
        return len(b), b[-1], d

    whole_graph(f, torch.randn(3))


def test_dict_pop_del_popitem_merge_operators():
    def f(x):
        d = {"a": x, "b": x * 2, "c": x * 3}
        a = d.pop("a")
        del d["b"]
        e = {"p": x, "q": x + 1}
        k, v = e.popitem()
        m = {"x": x} | {"y": x * 2}
        m |= {"z": x * 3}
        return a + d["c"], list(d), k, v, e, sum(m.values()), list(m)

    whole_graph(f, torch.randn(4, 8))


def test_ordered_dict_move_to_end_and_popitem_first():
    def f(x):
        od = collections.OrderedDict()
        od["first"] = x
        od["second"] = x * 2
        od["third"] = x * 3
        od.move_to_end("first")
        od.move_to_end("third", last=False)
        k, v = od.popitem(last=False)
        return k, v, list(od.keys()), od

    out = whole_graph(f, torch.randn(2))
    assert isinstance(out[3], collections.OrderedDict)


def test_set_literals_comprehensions_and_methods():
    def f(x):
        allowed = {"relu", "gelu"}
        if "gelu" in allowed:
            x = torch.nn.functional.gelu(x)
        s = set()
        s.add(1)
        s.add(2)
        s.discard(1)
        s.update([7, 8])
        t = s.copy()
        t.add(99)
        shapes = {tuple(v.shape) for v in (x, x[0], x[:1])}
        alias = s
        s |= {5}
        return x * len(s), 2 in s, len(allowed | {"silu"}), sorted(t), len(shapes), sorted(alias)

    whole_graph(f, torch.randn(4, 8))


def test_returned_set_is_a_new_object_per_call():
    def f(x):
        s = {1, 2}
        s.add(3)
        return s, x + 1

    compiled = kiln.compile(f)
    a, _ = compiled(torch.ones(2))
    a.add(100)
    b, _ = compiled(torch.ones(2))
    assert b == {1, 2, 3}
    assert stats()["graph_breaks"] == 0


def test_star_unpacking():
    def f(x):
        first, *middle, last = x.unbind(0)
        a, *b = (1, 2, 3)
        *c, d = [x, x + 1]
        return first + last, len(middle), a, b, len(c), d

    whole_graph(f, torch.randn(4, 8))


def test_list_of_sizes_mutated_longformer_chunk():
    # issue 15's silent wrong answer: the mutation of list(h.size()) was lost.
    def f(x):
        dims = list(x.shape)
        dims[-1] = dims[-1] // 2
        alias = dims
        dims.append(1)
        return x[..., : dims[1]].reshape(dims[:2]), tuple(dims), alias

    whole_graph(f, torch.randn(4, 8))
    # Lists of sizes/strides edited in place then read back by a tensor op:
    # test_views_capture.py's longformer_chunk.


def test_caller_kwargs_pop_is_replayed_and_guarded():
    def f(x, **kwargs):
        use_cache = kwargs.pop("use_cache", True)
        return torch.relu(x) + 1, use_cache

    compiled = kiln.compile(f)
    x = torch.randn(3)
    for kw in ({}, {}, {"use_cache": False}, {"use_cache": 7}):
        assert_close(compiled(x, **kw), f(x, **kw))
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["graphs_compiled"] == 3, s  # missing / False / 7


def test_caller_dict_pop_and_del_mutate_the_callers_dict():
    def f(x, d):
        v = d.pop("a", 0)
        del d["b"]
        return x * v, len(d)

    compiled = kiln.compile(f)
    d1, d2 = {"a": 2, "b": 3, "c": 4}, {"a": 2, "b": 3, "c": 4}
    assert_close(compiled(torch.ones(2), d1), f(torch.ones(2), d2))
    assert d1 == d2 == {"c": 4}
    s = stats()
    assert (s["graphs_compiled"], s["graph_breaks"], s["eager_calls"]) == (1, 0, 0), s


def test_reading_methods_of_the_callers_list_without_break():
    # torchvision's Swin: `shift_size = shift_size.copy()` of a module
    # attribute, then items of the copy assigned; index/count read it.
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.shift = [2, 3]
            self.sizes = [4, 4, 1]

        def forward(self, x):
            s = self.shift.copy()
            if x.shape[0] < 5:
                s[0] = 0
            return x.roll(s, (0, 1)) * self.sizes.count(4) + self.sizes.index(1)

    m = M()
    compiled = kiln.compile(m)
    x = torch.randn(4, 6)
    assert_close(compiled(x), m(x))
    assert m.shift == [2, 3]  # the copy's store did not reach the caller's list
    s = stats()
    assert (s["graphs_compiled"], s["graph_breaks"], s["eager_calls"]) == (1, 0, 0), s
    m.shift[1] = 1  # items read through the copy are guarded
    assert_close(compiled(x), m(x))
    assert stats()["graphs_compiled"] == 2


def test_caller_dict_values_read_without_break():
    def f(d):
        return sum(d.values()), sorted(d)

    whole_graph(f, {"a": torch.randn(3), "b": torch.randn(3)})


def test_sorting_or_searching_tensors_breaks():
    def sort_tensors(x):
        items = [x, x + 1]
        items.sort()
        return items

    def index_tensor(x):
        items = [x, x + 1]
        return items.index(x)

    x = torch.randn(1)
    for fn in (sort_tensors, index_tensor):
        kiln.reset()
        breaks(fn, x)


def test_unreplayed_mutations_of_the_callers_containers_break():
    def sort_caller(x, items):
        items.sort()
        return x * items[0]

    def ior_caller(x, d):
        d |= {"q": 1}
        return x + len(d)

    for fn, arg in ((sort_caller, [3, 1, 2]), (ior_caller, {"a": 1})):
        kiln.reset()
        a1, a2 = list(arg) if isinstance(arg, list) else dict(arg), arg
        got = kiln.compile(fn)(torch.ones(2), a1)
        assert_close(got, fn(torch.ones(2), a2))
        assert a1 == a2
        assert stats()["graph_breaks"] >= 1


def test_mutable_default_argument_of_inlined_function_is_updated():
    # The default list is read through `inner.__defaults__`: its mutation is
    # replayed on the real list after the graph, as eager mutates it.
    def inner(acc=[]):
        acc += [1]
        return len(acc)

    def outer(x):
        return x * inner()

    compiled = kiln.compile(outer)
    assert_close(compiled(torch.ones(2)), torch.ones(2))
    assert_close(compiled(torch.ones(2)), torch.ones(2) * 2)
    assert inner.__defaults__ == ([1, 1],)
    assert stats()["graph_breaks"] == 0


class Loud:
    """A key whose __hash__/__eq__ is Python code with a side effect."""

    calls = 0

    def __hash__(self):
        Loud.calls += 1
        return 1

    def __eq__(self, other):
        Loud.calls += 1
        return self is other


def test_set_of_objects_with_python_hash_breaks_not_runs_at_capture():
    key = Loud()

    def f(x):
        s = set()
        s.add(key)
        return x + len(s)

    Loud.calls = 0
    compiled = kiln.compile(f)
    for _ in range(3):
        assert_close(compiled(torch.ones(2)), torch.ones(2) * 2)
    assert Loud.calls == 3  # once per call, as in eager
    assert stats()["graph_breaks"] >= 1
