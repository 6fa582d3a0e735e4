"""The analyses' bounded tables: least recently used out first, the mapping their users rely on, memory
bounded by the limit however many keys pass through."""

import os
import pickle
import random
import re
import subprocess
import sys
import tracemalloc
from collections import OrderedDict

import pytest
from conftest import ROOT

import dissect
from dissect.core.bounded import BoundedDict, held_at, newest, peek, popped, put, refreshed, refreshed_at


def test_put_evicts_the_least_recently_used_and_returns_it():
    table = BoundedDict(3)
    assert [put(table, key, key + "0") for key in "abc"] == [None, None, None]
    assert refreshed(table, "a") == "a0"                # a is the newest now, b the oldest
    assert peek(table, "b") == "b0"                     # a peek leaves b where it is
    assert put(table, "d", "d0") == ("b", "b0")
    assert put(table, "c", "c1") is None                # a present key is refreshed, not added
    assert put(table, "e", "e0") == ("a", "a0")
    assert table.items() == [("d", "d0"), ("c", "c1"), ("e", "e0")]
    assert refreshed(table, "zz") is None and peek(table, "zz") is None and len(table) == 3



def test_a_slot_handle_reaches_its_entry_while_it_stays():
    table = BoundedDict(3)
    a, b, c = object(), object(), object()
    assert newest(table) == 0                           # an empty table has no newest entry
    put(table, "a", a)
    slot_a = newest(table)
    put(table, "b", b)
    put(table, "c", c)
    assert held_at(table, slot_a, a) and not held_at(table, slot_a, b) and not held_at(table, 0, a)
    assert not held_at(table, 999, a)                   # a slot the table never had
    assert refreshed_at(table, slot_a, a)               # a is the newest now: b goes first
    assert newest(table) == slot_a
    assert put(table, "d", object())[0] == "b"
    assert held_at(table, slot_a, a)
    put(table, "a", object())                           # a new value under the same key, in the same slot
    assert not held_at(table, slot_a, a) and not refreshed_at(table, slot_a, a)
    popped(table, "a")
    assert not held_at(table, slot_a, a)
    assert table.keys() == ["c", "d"]                   # refreshed_at that fails changes nothing

def test_the_mapping_behaves_as_an_ordered_dict():
    table = BoundedDict(10)
    table["x"] = 1
    table.update([("y", 2), ("z", 3)])
    table["x"] = 4                                      # replaced in place, as a dictionary would
    assert list(table) == ["x", "y", "z"] and table["x"] == 4 and "y" in table and "w" not in table
    table.move_to_end("x")
    table.move_to_end("z", last=False)
    assert table.keys() == ["z", "y", "x"] and table.values() == [3, 2, 4]
    assert table.popitem() == ("x", 4) and table.popitem(last=False) == ("z", 3)
    assert table.pop("y") == 2 and table.pop("y", "gone") == "gone" and table.get("y", 7) == 7
    with pytest.raises(KeyError, match="'y'"):
        table.pop("y")
    with pytest.raises(KeyError, match="'q'"):
        table["q"]
    with pytest.raises(KeyError):
        table.popitem()
    table.update({"a": 1, "b": 2})
    del table["a"]
    assert table == {"b": 2} and table != {"b": 3} and len(table) == 1
    copy = pickle.loads(pickle.dumps(table))
    assert copy.limit == 10 and copy.items() == [("b", 2)]
    table.clear()
    assert len(table) == 0 and table.items() == [] and put(table, "c", 1) is None and table.keys() == ["c"]


def test_random_operations_agree_with_an_ordered_dict_model():
    """The table against the OrderedDict it replaced, with the same put semantics: add or move to the end,
    then, past the limit, the oldest out."""
    rng = random.Random(16)
    for _ in range(200):
        limit = rng.randint(1, 12)
        table, model = BoundedDict(limit), OrderedDict()
        for _ in range(300):
            op, key, value = rng.randrange(8), rng.randrange(20), rng.random()
            if op == 0:
                model[key] = value
                model.move_to_end(key)
                assert put(table, key, value) == (model.popitem(last=False) if len(model) > limit else None)
            elif op == 1:
                if key in model:
                    model.move_to_end(key)
                assert refreshed(table, key) == model.get(key)
            elif op == 2:  # popped is what the analyses call in C for pop(key, None)
                taken = popped(table, key) if rng.random() < 0.5 else table.pop(key, None)
                assert taken == model.pop(key, None)
            elif op == 3 and model:
                last = rng.random() < 0.5
                assert table.popitem(last) == model.popitem(last)
            elif op == 4 and key in model:
                last = rng.random() < 0.5
                table.move_to_end(key, last)
                model.move_to_end(key, last)
            elif op == 5:
                table[key] = model[key] = value  # past the limit too: put makes room later
            elif op == 6 and key in model:
                del table[key], model[key]
            elif op == 7:
                assert peek(table, key) == model.get(key)
            assert table.items() == list(model.items())
            assert list(table.newest_first()) == list(reversed(model.items()))


def test_memory_stays_bounded_by_the_limit_however_many_keys_pass():
    table = BoundedDict(64)
    for key in range(2000):  # the table's slots reach their size
        put(table, ("10.0.0.1", key), key)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for key in range(2000, 200_000):
        put(table, ("10.0.0.1", key), key)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(table) == 64 and grown < 16_384
    assert table.keys() == [("10.0.0.1", key) for key in range(199_936, 200_000)]


def test_a_key_that_cannot_be_hashed_leaves_the_table_as_it_was():
    """put takes a slot for the new entry before it looks the key up: a key that raises there gives the slot back,
    so however many such keys pass, the table neither changes nor grows."""
    table = BoundedDict(3)
    for key in "abc":
        put(table, key, key.upper())
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    refused = 0
    for _ in range(50_000):
        try:
            put(table, ["unhashable"], 0)
        except TypeError:
            refused += 1
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert refused == 50_000 and table.items() == [("a", "A"), ("b", "B"), ("c", "C")] and grown < 16_384
    assert put(table, "d", "D") == ("a", "A") and table.keys() == ["b", "c", "d"]


@pytest.mark.skipif(not dissect.compiled(), reason="the pure-Python build is installed")
def test_the_pure_python_table_passes_the_same_tests():
    """The tests above, run again on the interpreted module (the compiled one is a different type)."""
    env = dict(os.environ, DISSECT_PURE_PYTHON="1")
    source = subprocess.run([sys.executable, "-c", "import dissect.core.bounded as m; print(m.__file__)"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=60)
    assert source.stdout.strip().endswith(os.path.join("core", "bounded.py"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "not pure_python"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    assert re.search(r"^6 passed", done.stdout, re.M)
