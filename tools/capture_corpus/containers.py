# SPDX-License-Identifier: Apache-2.0
"""Containers: list/dict/set building and mutation (append, extend, insert,
pop, del, clear, update, setdefault), OrderedDict and defaultdict, nested
structures returned to the caller, dict(...)/list(...)/tuple(...) calls,
tuple unpacking with stars, ``in`` tests, lists as stacks and queues."""
from __future__ import annotations

from collections import OrderedDict, defaultdict, deque

import torch

from capture_corpus._case import case, randn


def _x(n):
    return (randn(n, 8),)


@case("containers", _x)
def list_append_pop(x):
    stack = [x]
    stack.append(x * 2)
    stack.append(x * 3)
    top = stack.pop()
    return top + stack[-1], len(stack)


@case("containers", _x)
def list_insert_extend_del(x):
    items = [x]
    items.insert(0, x + 1)
    items.extend([x - 1, x * 0])
    del items[1]
    return torch.stack(items)


@case("containers", _x)
def list_clear_reuse(x):
    buf = [x, x]
    buf.clear()
    buf.append(x.sum())
    return buf


@case("containers", _x)
def list_slice_assign(x):
    parts = [x[i] for i in range(4)]
    parts[1:3] = [parts[2], parts[1]]
    return torch.stack(parts)


@case("containers", _x)
def list_index_count(x):
    names = ["a", "b", "c", "b"]
    return x * names.index("c") + names.count("b")


@case("containers", _x)
def list_of_tensors_in(x):
    seen = [x]
    y = x + 1
    return (y in seen) if False else len(seen), x in seen


@case("containers", _x)
def dict_update_setdefault(x):
    d = {"x": x}
    d.update(y=x * 2, z=x * 3)
    d.setdefault("w", x - 1)
    d.setdefault("x", None)
    return d


@case("containers", _x)
def dict_pop_del(x):
    d = {"a": x, "b": x * 2, "c": x * 3}
    a = d.pop("a")
    del d["b"]
    return a + d["c"], list(d)


@case("containers", _x)
def dict_call_constructor(x):
    d = dict(a=x, b=x + 1)
    d2 = dict(d)
    d2["a"] = x * 0
    return d["a"] + d2["b"], dict(zip(["p", "q"], [x, x]))


@case("containers", _x)
def dict_get_default(x):
    cfg = {"dropout": 0.0}
    return x * (1 - cfg.get("dropout", 0.1)) + cfg.get("bias", 0.0)


@case("containers", _x)
def dict_merge_operators(x):
    a = {"x": x}
    b = {"y": x * 2}
    c = a | b
    c |= {"z": x * 3}
    return sum(c.values())


@case("containers", _x)
def dict_keys_values_items(x):
    d = {"b": x, "a": x * 2}
    return list(d.keys()), list(d.values())[1], [(k, v.sum()) for k, v in d.items()]


@case("containers", _x)
def ordered_dict_ops(x):
    od = OrderedDict()
    od["first"] = x
    od["second"] = x * 2
    od.move_to_end("first")
    k, v = od.popitem(last=False)
    return k, v, list(od.keys())


@case("containers", _x)
def defaultdict_list_append(x):
    groups = defaultdict(list)
    for i in range(x.shape[0]):
        groups[i % 2].append(x[i])
    return {k: torch.stack(v).sum(0) for k, v in groups.items()}


@case("containers", _x)
def defaultdict_int_counter(x):
    counts = defaultdict(int)
    for name in ["conv", "bn", "conv", "relu"]:
        counts[name] += 1
    return x * counts["conv"], dict(counts)


@case("containers", _x)
def set_of_constants(x):
    allowed = {"relu", "gelu"}
    act = "gelu"
    if act in allowed:
        x = torch.nn.functional.gelu(x)
    return x, len(allowed | {"silu"})


@case("containers", _x)
def set_add_discard(x):
    s = set()
    s.add(1)
    s.add(2)
    s.discard(1)
    return x * len(s), 2 in s


@case("containers", _x)
def frozenset_membership(x):
    keep = frozenset([0, 2])
    return torch.stack([x[i] for i in range(4) if i in keep])


@case("containers", _x)
def set_of_tensors_by_identity(x):
    y = x * 2
    params = {x, y}
    return len(params), x in params, sum(t.sum() for t in [x, y])


@case("containers", _x)
def tuple_star_unpack(x):
    first, *middle, last = x.unbind(0)
    return first + last, len(middle)


@case("containers", _x)
def tuple_concat_and_multiply(x):
    shape = (x.shape[0],) + (1,) * 2
    return x.sum(1).view(shape), shape * 2


@case("containers", _x)
def nested_structure_return(x):
    return {"a": [x, (x + 1, {"b": x * 2})], "c": None, "d": 3}


@case("containers", _x)
def list_constructor_from_tensor_shape(x):
    dims = list(x.shape)
    dims[-1] = dims[-1] // 2
    return x[..., : dims[-1]].reshape(dims), tuple(dims)


@case("containers", _x)
def deque_rolling_window(x):
    window = deque(maxlen=2)
    for row in x:
        window.append(row)
    return torch.stack(list(window))


@case("containers", _x)
def list_sort_reverse(x):
    vals = [3, 1, 2]
    vals.sort(reverse=True)
    vals.reverse()
    return x[:, vals]


@case("containers", _x)
def list_comprehension_with_index(x):
    idx = [i for i in range(8) if i % 3 == 0]
    return x[:, idx]


@case("containers", _x)
def dict_of_lists_mutation(x):
    state = {"hist": []}
    for k in range(3):
        state["hist"].append(x * k)
    state["hist"] = state["hist"][1:]
    return state


@case("containers", _x)
def list_copy_independent(x):
    a = [x, x + 1]
    b = a.copy()
    b.append(x + 2)
    c = list(a)
    c[0] = x * 0
    return len(a), len(b), a[0] + c[0]


@case("containers", _x)
def dict_iteration_while_building(x):
    src = {"a": 1, "b": 2}
    out = {}
    for k in src:
        out[k + "_t"] = x * src[k]
    return out


@case("containers", _x)
def kwargs_dict_splat(x):
    opts = {"dim": 1, "keepdim": True}
    return x.sum(**opts), x.mean(**opts)
