# What goes IN (docs/contract.md "Signatures, weak types, promotion", "Errors", "Merge family"):
# jnp's and lax's signatures (positional axis, axis=None, kind / order / stable, lax.sort's operand
# forms, sort_key_val, searchsorted's sorter and method) with jnp's exception types; traced axes /
# dimensions / num_keys named, with how to make them static; check_sorted_inputs (checkify checks of
# sorted inputs: eager, jit, vmap, ragged prefixes, the first unsorted row, an unchanged program
# when off, checked and unchecked traces never sharing jax.jit's cache, per thread); merge_by_key's
# ragged rows against the numpy reference (CPU, jit, vmap, grad); py.typed; the quickstart's
# --help. References: jnp / lax themselves on data without subnormals, and reference.py's numpy
# merges.
from __future__ import annotations

import importlib.util
import inspect
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.experimental import checkify
from reference import assert_bits_equal, random_keys, ref_merge, ref_merge_by_key, sorted_keys
from sort_checks import no_subnormals
from tiers import core_fast

import jax_mergepath as jmp
import jax_mergepath._merge as merge_module
import jax_mergepath._sort as sort_module

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

ROOT = Path(__file__).resolve().parents[1]


def _values(x) -> np.ndarray:
    """Values only: index dtypes are another part's business (int32 here, jnp's under x64)."""
    return np.asarray(x).astype(np.int64) if np.asarray(x).dtype.kind in "iub" else np.asarray(x)


def _plain(rng, dtype, shape) -> np.ndarray:
    """Keys jnp sorts as we do on the CPU: no subnormals (XLA:CPU flushes them)."""
    return no_subnormals(random_keys(rng, dtype, shape, "plain"))


def _params(fn) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


# ------------------------------------------------------------------------------ signatures


@pytest.mark.parametrize(
    ("name", "theirs", "extra"),
    [
        ("sort", jnp.sort, ["axis_name"]),
        ("argsort", jnp.argsort, ["axis_name"]),
        ("lax_sort", lax.sort, ["axis_name"]),
        ("sort_key_val", lax.sort_key_val, ["axis_name"]),
        ("searchsorted", jnp.searchsorted, ["sorted_v", "axis_name"]),
    ],
    ids=["sort", "argsort", "lax_sort", "sort_key_val", "searchsorted"],
)
def test_signatures_are_jnp_and_lax_ones(name, theirs, extra):
    want = _params(theirs)
    got = _params(getattr(jmp, name))
    assert [p for p in got if p[0] not in extra] == want
    assert all(p[1] == inspect.Parameter.KEYWORD_ONLY for p in got if p[0] in extra)


def test_sort_key_val_is_exported():
    assert "sort_key_val" in jmp.__all__ and "check_sorted_inputs" in jmp.__all__


# ------------------------------------------------------------------------------ sort / argsort


@pytest.mark.parametrize("axis", core_fast([0, 1, -1, 2, None], lambda a: a in (1, None)))
def test_sort_positional_axis_and_none_as_jnp(rng, axis):
    x = _plain(rng, np.float32, (3, 4, 50))
    assert_bits_equal(jmp.sort(x, axis), jnp.sort(x, axis))
    np.testing.assert_array_equal(_values(jmp.argsort(x, axis)), _values(jnp.argsort(x, axis)))
    assert_bits_equal(jax.jit(jmp.sort, static_argnums=1)(x, axis), jnp.sort(x, axis))


def test_axis_none_flattens_any_shape_0d_too(rng):
    for x in (np.float32(3.0), random_keys(rng, np.int16, (2, 3, 5))):
        assert_bits_equal(jmp.sort(x, axis=None), jnp.sort(x, axis=None))
        np.testing.assert_array_equal(
            _values(jmp.argsort(x, axis=None, descending=True)),
            _values(jnp.argsort(x, axis=None, descending=True)),
        )


def test_stable_false_is_accepted_and_stable(rng):
    x = random_keys(rng, np.int8, (4, 300), "few")
    want = _values(jnp.argsort(x, axis=-1, stable=True))
    np.testing.assert_array_equal(_values(jmp.argsort(x, stable=False)), want)
    assert_bits_equal(jmp.sort(x, -1, stable=False), jnp.sort(x, -1, stable=True))


@pytest.mark.parametrize("fn", ["sort", "argsort"])
@pytest.mark.parametrize("kw", [{"kind": "stable"}, {"kind": "quicksort"}, {"order": "f0"}],
                         ids=["kind_stable", "kind_quicksort", "order"])
def test_kind_and_order_raise_as_jnp(fn, kw):
    x = jnp.arange(5.0)
    with pytest.raises(TypeError) as theirs:
        getattr(jnp, fn)(x, **kw)
    with pytest.raises(type(theirs.value), match=rf"'{next(iter(kw))}' argument"):
        getattr(jmp, fn)(x, **kw)


@pytest.mark.parametrize(
    ("ours", "theirs", "arg"),
    [
        (lambda x, a: jmp.sort(x, a), lambda x, a: jnp.sort(x, a), "axis"),
        (lambda x, a: jmp.argsort(x, axis=a), lambda x, a: jnp.argsort(x, axis=a), "axis"),
        (lambda x, a: jmp.lax_sort(x, a), lambda x, a: lax.sort(x, a), "dimension"),
        (lambda x, a: jmp.lax_sort((x, x), num_keys=a + 1),
         lambda x, a: lax.sort((x, x), num_keys=a + 1), "num_keys"),
        (lambda x, a: jmp.sort_key_val(x, x, a), lambda x, a: lax.sort_key_val(x, x, a),
         "dimension"),
    ],
    ids=["sort", "argsort", "lax_sort_dimension", "lax_sort_num_keys", "sort_key_val"],
)  # fmt: skip
def test_traced_static_arguments_say_to_make_them_static(ours, theirs, arg):
    x = jnp.arange(6.0).reshape(2, 3)
    with pytest.raises((TypeError, ValueError)) as want:
        jax.jit(theirs)(x, 0)
    with pytest.raises(Exception) as got:
        jax.jit(ours)(x, 0)
    # jnp's exception type (jnp.sort: ValueError, its axis is a static argument; lax: TypeError)
    assert isinstance(got.value, TypeError) == isinstance(want.value, TypeError)
    assert isinstance(got.value, ValueError) == isinstance(want.value, ValueError)
    assert f"{arg} must be a static int" in str(got.value)
    assert "static_argnames" in str(got.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda a, ax: jmp.merge(a, a, axis=ax),
        lambda a, ax: jmp.merge_by_key(a, a, a, a, axis=ax),
        lambda a, ax: jmp.merge_runs(a, 1, axis=ax),
        lambda a, ax: jmp.is_sorted(a, axis=ax),
        lambda a, ax: jmp.sort_by_key(a, a, axis=ax),
    ],
    ids=["merge", "merge_by_key", "merge_runs", "is_sorted", "sort_by_key"],
)
def test_traced_axis_of_the_other_functions(call):
    with pytest.raises(TypeError, match=r"axis must be a static int.*static_argnames='axis'"):
        jax.jit(call)(jnp.arange(4.0), 0)


# ------------------------------------------------------------------------------ lax_sort


def test_lax_sort_operand_forms_as_lax(rng):
    x = random_keys(rng, np.int32, (3, 40), "few")
    y = _plain(rng, np.float32, (3, 40))
    for operand in (x, [x], (x, y), [x, y]):
        got, want = jmp.lax_sort(operand, 0), lax.sort(operand, 0)
        assert type(got) is type(want)  # an array, or a tuple for any sequence
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            assert_bits_equal(g, w)
    assert_bits_equal(jmp.lax_sort(operand=x, dimension=0), lax.sort(operand=x, dimension=0))
    got = jmp.lax_sort([x, y], dimension=1, is_stable=False, num_keys=2)
    for g, w in zip(got, lax.sort([x, y], dimension=1, num_keys=2), strict=True):
        assert_bits_equal(g, w)


def test_lax_sort_empty_sequence_raises_as_lax():
    with pytest.raises(TypeError):
        lax.sort(())
    with pytest.raises(TypeError, match=r"lax_sort: operand is an empty sequence"):
        jmp.lax_sort(())


def test_sort_key_val_as_lax(rng):
    keys = random_keys(rng, np.int16, (50, 3), "few")
    values = _plain(rng, np.float32, (50, 3))
    for dim in (0, 1, -1):
        got = jmp.sort_key_val(keys, values, dim, is_stable=False)
        want = lax.sort_key_val(keys, values, dim, is_stable=True)
        assert isinstance(got, tuple) and len(got) == 2
        assert_bits_equal(got[0], want[0])
        assert_bits_equal(got[1], want[1])
    got = jax.jit(jax.vmap(jmp.sort_key_val))(keys, values)
    want = jax.vmap(lax.sort_key_val)(keys, values)
    assert_bits_equal(got[1], want[1])
    with pytest.raises(ValueError, match=r"\bvalues\b"):
        jmp.sort_key_val(keys, values[:, :2])


# ------------------------------------------------------------------------------ searchsorted


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_sorter_as_jnp(rng, side):
    a = random_keys(rng, np.int32, (200,), "random")
    v = random_keys(rng, np.int32, (7, 11), "random")
    v[0, :5] = a[:5]
    sorter = np.argsort(a, kind="stable")
    want = jnp.searchsorted(a, v, side, sorter)
    np.testing.assert_array_equal(_values(jmp.searchsorted(a, v, side, sorter)), _values(want))
    got = jax.jit(lambda a, v, s: jmp.searchsorted(a, v, side, s))(a, v, sorter)
    np.testing.assert_array_equal(_values(got), _values(want))
    # negative and out-of-range positions as jnp's indexing: a[sorter]
    odd = np.concatenate([sorter[:150] - 200, sorter[150:] + 1000])
    np.testing.assert_array_equal(_values(jmp.searchsorted(a, v, side, odd)),
                                  _values(jnp.searchsorted(a, v, side, odd)))


def test_searchsorted_sorter_batched(rng):
    a = _plain(rng, np.float32, (3, 64))
    v = np.sort(_plain(rng, np.float32, (3, 20)), axis=-1)
    sorter = np.argsort(a, axis=-1, kind="stable")
    for sorted_v in (False, True):
        got = jmp.searchsorted(a, v, "right", sorter, sorted_v=sorted_v)
        want = [jnp.searchsorted(a[r], v[r], "right", sorter[r]) for r in range(3)]
        np.testing.assert_array_equal(_values(got), _values(np.stack(want)))
    with pytest.raises(ValueError, match=r"\bsorter\b"):
        jmp.searchsorted(a, v, sorter=sorter[:2])
    with pytest.raises(TypeError, match=r"\bsorter\b"):
        jmp.searchsorted(a, v, sorter=sorter.astype(np.float32))


@pytest.mark.parametrize("method", ["scan", "scan_unrolled", "sort", "compare_all"])
def test_searchsorted_methods_as_jnp(rng, method):
    a = np.sort(_plain(rng, np.float32, (300,)))
    v = _plain(rng, np.float32, (40,))
    want = jnp.searchsorted(a, v, "left", method=method)
    np.testing.assert_array_equal(_values(jmp.searchsorted(a, v, method=method)), _values(want))


@pytest.mark.parametrize("kw", [{"method": "bisect"}, {"method": "SCAN"}], ids=["bisect", "upper"])
def test_searchsorted_bad_method_as_jnp(kw):
    a, v = jnp.arange(5.0), jnp.arange(3.0)
    with pytest.raises(ValueError) as want:
        jnp.searchsorted(a, v, **kw)
    with pytest.raises(type(want.value), match=next(iter(kw))) as got:
        jmp.searchsorted(a, v, **kw)
    assert "sorted_v" in str(got.value)


def test_searchsorted_method_docstring_names_sorted_v():
    doc = jmp.searchsorted.__doc__
    method_arg = doc[doc.index("        method:") : doc.index("        sorted_v:")]
    assert "sorted_v" in method_arg and "compare_all" in method_arg


# ------------------------------------------------------------------------------ checked mode


def _merge_rows(rng, rows, m, n, bad_rows=(), descending=False):
    """Sorted int32 rows of a and b; the rows bad_rows of a get one element out of order."""
    a = np.sort(rng.integers(0, 1000, (rows, m), dtype=np.int32), axis=-1)
    b = np.sort(rng.integers(0, 1000, (rows, n), dtype=np.int32), axis=-1)
    if descending:
        a, b = a[:, ::-1].copy(), b[:, ::-1].copy()
    for r in bad_rows:
        a[r, m // 2] = -1 if descending else 1000  # past its right neighbour
    return a, b


def test_checked_merge_eager_raises_naming_a_and_the_first_row(rng):
    a, b = _merge_rows(rng, 6, 30, 20, bad_rows=(4, 2))
    with jmp.check_sorted_inputs():
        with pytest.raises(checkify.JaxRuntimeError,
                           match=r"merge: a is not sorted.*batch index \[2\]"):
            jmp.merge(a, b)
        with pytest.raises(checkify.JaxRuntimeError, match=r"merge: b is not sorted.*\[2\]"):
            jmp.merge(b, a)
        jmp.merge(b, b)  # sorted: no error
    jmp.merge(a, b)  # off again


def test_checked_under_jit_with_checkify_and_2d_batch(rng):
    a, b = _merge_rows(rng, 12, 30, 20, bad_rows=(7, 11))
    a, b = a.reshape(3, 4, 30), b.reshape(3, 4, 20)
    with jmp.check_sorted_inputs():
        f = checkify.checkify(jax.jit(lambda a, b: jmp.merge(a, b, descending=False)))
        err, _ = f(a, b)
        assert "batch index [1, 3]" in err.get()
        err, out = f(b, b)
        assert err.get() is None
    assert_bits_equal(out, ref_merge(b, b)[0])
    with jmp.check_sorted_inputs(), pytest.raises(checkify.JaxRuntimeError, match=r"\[1, 3\]"):
        checkify.checkify(jax.jit(jmp.merge))(a, b)[0].throw()


def test_checked_direction_and_axis(rng):
    a, b = _merge_rows(rng, 5, 20, 9, bad_rows=(3,), descending=True)
    with jmp.check_sorted_inputs():
        f = checkify.checkify(jax.jit(jmp.merge, static_argnames=("axis", "descending")))
        assert "descending order: first unsorted row at batch index [3]" in f(
            a.T, b.T, axis=0, descending=True)[0].get()
        assert f(b.T, b.T, axis=0, descending=True)[0].get() is None
        assert "a is not sorted in ascending order" in f(b, b, descending=False)[0].get()


@pytest.mark.slow
def test_checked_under_vmap(rng):
    a, b = _merge_rows(rng, 6, 30, 20, bad_rows=(4,))
    with jmp.check_sorted_inputs():
        f = checkify.checkify(jax.jit(jax.vmap(jmp.merge)))
        assert "a is not sorted" in f(a, b)[0].get()
        assert f(b, b)[0].get() is None
        # a vmapped check of a batched call names the row inside the mapped function
        g = checkify.checkify(jax.vmap(jmp.merge))
        good = np.sort(a, axis=-1)
        assert "batch index [4]" in g(np.stack([good, a]), np.stack([b, b]))[0].get()
        assert g(np.stack([good, good]), np.stack([b, b]))[0].get() is None


def test_checked_ragged_rows_check_the_valid_prefix_only(rng):
    a, b = _merge_rows(rng, 4, 30, 20)
    a[1, 20:] = a[1, 20:][::-1] - 1000  # unsorted after position 20
    b[3, 10:] = 0
    b[3, 15] = -5  # unsorted after position 10
    with jmp.check_sorted_inputs():
        f = checkify.checkify(jax.jit(jmp.merge))
        assert f(a, b, a_length=np.array([30, 20, 5, 30]), b_length=10)[0].get() is None
        err = f(a, b, a_length=np.array([30, 21, 30, 30]), b_length=10)[0].get()
        assert "a (its valid prefix, a_length) is not sorted" in err and "[1]" in err
        err = f(a, b, a_length=20, b_length=np.array([20, 20, 20, 16]))[0].get()
        assert "b (its valid prefix, b_length)" in err and "[3]" in err
        k = checkify.checkify(jax.jit(jmp.merge_by_key))
        assert k(a, b, a, b, a_length=20, b_length=10)[0].get() is None
        assert "a_keys (its valid prefix" in k(a, b, a, b, a_length=21, b_length=10)[0].get()
        # under vmap, lengths mapped with the rows
        v = checkify.checkify(jax.vmap(lambda a, b, la: jmp.merge(a, b, a_length=la,
                                                                  b_length=10)))
        assert v(a, b, np.array([30, 20, 0, 30]))[0].get() is None
        assert "a (its valid prefix" in v(a, b, np.array([30, 22, 0, 30]))[0].get()


def test_checked_merge_runs_checks_each_run(rng):
    x = np.concatenate([np.sort(rng.integers(50, 100, (3, 10)), axis=-1),
                        np.sort(rng.integers(0, 100, (3, 8)), axis=-1)], axis=-1)
    x[:, 10] = -1  # the runs meet out of order: not an error
    split = np.array([10, 10, 10])
    with jmp.check_sorted_inputs():
        f = checkify.checkify(jax.jit(jmp.merge_runs))
        assert f(x, split)[0].get() is None
        assert "x's first run (before split)" in f(x, np.array([10, 11, 10]))[0].get()
        assert "first unsorted row at batch index [1]" in f(x, np.array([10, 11, 10]))[0].get()
        bad = x.copy()
        bad[2, 15] = bad[2, 17] + 1
        assert "x's second run (from split on)" in f(bad, split)[0].get()
        assert f(bad, np.array([10, 10, 18]))[0].get() is not None  # the first run now


def test_checked_co_rank_and_searchsorted(rng):
    a, b = _merge_rows(rng, 3, 30, 20, bad_rows=(1,))
    k = np.full((3, 2), 7)
    with jmp.check_sorted_inputs():
        c = checkify.checkify(jax.jit(jmp.co_rank))
        assert "co_rank: a is not sorted" in c(k, a, b)[0].get()
        assert "co_rank: b is not sorted" in c(k, b, a)[0].get()
        assert c(k, b, b)[0].get() is None
        s = checkify.checkify(jax.jit(jmp.searchsorted, static_argnames="sorted_v"))
        assert "searchsorted: a is not sorted" in s(a, b)[0].get()
        assert s(b, a)[0].get() is None  # unsorted queries are fine without sorted_v
        assert "v (sorted_v=True) is not sorted" in s(b, a, sorted_v=True)[0].get()
        order = np.argsort(a, axis=-1, kind="stable")
        assert s(a, b, sorter=order)[0].get() is None
        assert "a[sorter] is not sorted" in s(a, b, sorter=order[:, ::-1])[0].get()
        assert s(a[0], np.int32(3), sorter=order[0], sorted_v=True)[0].get() is None  # 0-d v


def test_checked_switch_nests_and_checks_its_argument(rng):
    a, b = _merge_rows(rng, 2, 10, 10, bad_rows=(1,))
    with jmp.check_sorted_inputs(), jmp.check_sorted_inputs(False):
        jmp.merge(a, b)
    with jmp.check_sorted_inputs(False), jmp.check_sorted_inputs(), \
            pytest.raises(checkify.JaxRuntimeError):
        jmp.merge(a, b)
    with pytest.raises(TypeError, match="enabled"), jmp.check_sorted_inputs("yes"):
        pass


def _runs_unchecked(jitted, cf, a, b, good) -> None:
    """Outside the block: jitted merges (unsorted input too: a permutation) without a traced
    check (which would fail to compile without checkify), and cf finds no error."""
    assert_bits_equal(jitted(good, b), ref_merge(good, b)[0])
    jitted(a, b)
    assert cf(a, b)[0].get() is None


def _runs_checked(cf, a, b, good) -> None:
    """Inside the block: cf and a fresh checkify(jit(merge)) find row 1 of a unsorted."""
    with jmp.check_sorted_inputs():
        for checked in (cf, checkify.checkify(jax.jit(jmp.merge))):
            assert "batch index [1]" in checked(a, b)[0].get()
            assert checked(good, b)[0].get() is None


def test_checked_and_unchecked_traces_never_share_a_cache_entry(rng):
    """The switch is in jax.jit's cache key: a program traced outside the block runs checked
    inside it and a checked one never leaks out, both orders, with one jit object and with a
    fresh jax.jit of the same function on each side."""
    a, b = _merge_rows(rng, 3, 20, 10, bad_rows=(1,))
    good = np.sort(a, axis=-1)
    for unchecked_first in (True, False):
        jax.clear_caches()
        f = jax.jit(jmp.merge)
        cf = checkify.checkify(f)
        if unchecked_first:
            _runs_unchecked(f, cf, a, b, good)
        _runs_checked(cf, a, b, good)
        _runs_unchecked(f, cf, a, b, good)
        _runs_unchecked(jax.jit(jmp.merge), cf, a, b, good)
        _runs_checked(cf, a, b, good)


def test_checked_switch_is_per_thread(rng):
    a, b = _merge_rows(rng, 2, 10, 10, bad_rows=(1,))
    got = {}

    def other_thread():
        got["merged"] = jmp.merge(a, b)  # the block is this test's thread's: no check here

    with jmp.check_sorted_inputs():
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        with pytest.raises(checkify.JaxRuntimeError):
            jmp.merge(a, b)
    assert got["merged"].shape == (2, 20)


def test_checked_mode_without_its_config_state_raises_naming_the_fix(monkeypatch, rng):
    """The switch is made by jax's private config.bool_state: where that fails, the checked
    mode says so (and how to go on) instead of running unchecked; the functions still work."""
    from jax_mergepath import _checked

    monkeypatch.setattr(_checked, "_STATE", None)
    monkeypatch.setattr(_checked, "_STATE_ERROR", AttributeError("no bool_state"))
    with pytest.raises(RuntimeError, match=r"bool_state.*no bool_state.*is_sorted"):
        with jmp.check_sorted_inputs():
            pass
    a, b = _merge_rows(rng, 2, 10, 10)
    assert_bits_equal(jmp.merge(a, b), ref_merge(a, b)[0])


def test_checked_state_is_jax_config():
    """The switch is jax's config option, in the jit key (the keying the cache test relies on)."""
    assert jax.config.jax_mergepath_check_sorted_inputs is False
    with jmp.check_sorted_inputs():
        assert jax.config.jax_mergepath_check_sorted_inputs is True
    assert jax.config.jax_mergepath_check_sorted_inputs is False


@pytest.mark.slow
def test_checked_grad_passes_through(rng):
    a = np.sort(rng.standard_normal((3, 10)).astype(np.float32), axis=-1)
    b = np.sort(rng.standard_normal((3, 6)).astype(np.float32), axis=-1)
    loss = lambda a, b: jnp.sum(jmp.merge(a, b) * jnp.arange(16.0))  # noqa: E731
    with jmp.check_sorted_inputs():
        err, g = checkify.checkify(jax.grad(loss))(a, b)
    assert err.get() is None
    np.testing.assert_array_equal(np.asarray(g), np.asarray(jax.grad(loss)(a, b)))


LOWERED_CALLS = {
    "merge": (lambda a, b: jmp.merge(a, b, return_indices=True), (3, 30), (3, 20)),
    "merge_ragged": (lambda a, b: jmp.merge(a, b, a_length=jnp.array([1, 2, 3]), b_length=4),
                     (3, 30), (3, 20)),
    "merge_by_key": (lambda a, b: jmp.merge_by_key(a, b, a, b, a_length=3, descending=True),
                     (3, 30), (3, 20)),
    "merge_runs": (lambda a, b: jmp.merge_runs(a, b[:, 0]), (3, 30), (3, 20)),
    "co_rank": (lambda a, b: jmp.co_rank(b, a, a), (3, 30), (3, 20)),
    "searchsorted": (lambda a, b: jmp.searchsorted(a, b, "right", b[:, :5], sorted_v=True),
                     (3, 30), (3, 20)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(LOWERED_CALLS))
def test_checks_off_leave_the_program_unchanged(monkeypatch, name):
    fn, sa, sb = LOWERED_CALLS[name]
    args = (jax.ShapeDtypeStruct(sa, jnp.int32), jax.ShapeDtypeStruct(sb, jnp.int32))

    def lowered(*, patched: bool = False, on: bool = False) -> str:
        with monkeypatch.context() as mp:
            if patched:  # the code path without any check call
                for module in (merge_module, sort_module):
                    mp.setattr(module, "require_sorted", lambda *a, **k: None)
            with jmp.check_sorted_inputs(on):
                traced = checkify.checkify(fn) if on else fn
                return jax.jit(traced).lower(*args).as_text()

    off = lowered()
    assert off == lowered(patched=True)
    assert "jmp_is_sorted" not in off
    checked = lowered(on=True)
    assert checked != off and "jmp_is_sorted" in checked


# ------------------------------------------------------------------------------ ragged merge_by_key


def _lengths(rng, rows, size):
    return rng.integers(-2, size + 3, rows)


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize(("m", "n"), core_fast([(1, 1), (7, 300), (300, 7), (2000, 1500)],
                                               lambda mn: mn == (7, 300), unpack=True), ids=str)
def test_merge_by_key_ragged_rows(rng, descending, m, n):
    rows = 5
    ak = sorted_keys(rng, np.float32, (rows, m), "few", descending=descending)
    bk = sorted_keys(rng, np.float32, (rows, n), "few", descending=descending)
    la, lb = _lengths(rng, rows, m), _lengths(rng, rows, n)
    kw = {"a_length": la, "b_length": lb, "descending": descending}
    # one leaf shaped like the keys (moved inside the kernel), and a pytree (gathered)
    av, bv = rng.integers(0, 2**31, (rows, m)), rng.integers(0, 2**31, (rows, n))
    trees = (
        (av.astype(np.int32), bv.astype(np.int32)),
        ({"id": av, "pos": rng.standard_normal((rows, m, 3))},
         {"id": bv, "pos": rng.standard_normal((rows, n, 3))}),
    )
    for a_values, b_values in trees:
        want_k, want_v = ref_merge_by_key(ak, bk, a_values, b_values, **kw)
        for fn in (jmp.merge_by_key, jax.jit(jmp.merge_by_key,
                                             static_argnames=("descending",))):
            got_k, got_v = fn(ak, bk, a_values, b_values, **kw)
            assert_bits_equal(got_k, want_k)
            for g, w in zip(jax.tree.leaves(got_v), jax.tree.leaves(want_v), strict=True):
                assert_bits_equal(g, w)
    # one length for every row, and a length on one side only; another axis
    for kw in ({"a_length": 3}, {"b_length": np.int64(2)}, {"a_length": 0, "b_length": 0}):
        want_k, want_v = ref_merge_by_key(ak.T, bk.T, av.T, bv.T, axis=0,
                                          descending=descending, **kw)
        got_k, got_v = jmp.merge_by_key(ak.T, bk.T, av.T, bv.T, axis=0, descending=descending,
                                        **kw)
        assert_bits_equal(got_k, want_k)
        assert_bits_equal(got_v, want_v)


def test_merge_by_key_ragged_under_vmap(rng):
    ak, bk = sorted_keys(rng, np.int16, (6, 40)), sorted_keys(rng, np.int16, (6, 25))
    av, bv = random_keys(rng, np.float32, (6, 40, 2)), random_keys(rng, np.float32, (6, 25, 2))
    la, lb = _lengths(rng, 6, 40), _lengths(rng, 6, 25)
    f = jax.vmap(lambda ak, bk, av, bv, la: jmp.merge_by_key(ak, bk, av, bv, a_length=la,
                                                             b_length=lb[0]))
    got_k, got_v = jax.jit(f)(ak, bk, av, bv, la)
    want_k, want_v = ref_merge_by_key(ak, bk, av, bv, a_length=la, b_length=lb[0])
    assert_bits_equal(got_k, want_k)
    assert_bits_equal(got_v, want_v)
    # the batched call is the same as the vmap
    got = jmp.merge_by_key(ak, bk, av, bv, a_length=la, b_length=lb[0])
    assert_bits_equal(got[1], want_v)


@pytest.mark.slow
def test_merge_by_key_ragged_grad(rng):
    ak = np.sort(rng.standard_normal((3, 12)).astype(np.float32), axis=-1)
    bk = np.sort(rng.standard_normal((3, 9)).astype(np.float32), axis=-1)
    av, bv = rng.standard_normal((3, 12)), rng.standard_normal((3, 9))
    la, lb = np.array([0, 5, 12]), np.array([9, 2, 4])
    w = jnp.asarray(rng.standard_normal((3, 21)))

    def loss(ak, bk, av, bv):
        k, v = jmp.merge_by_key(ak, bk, av, bv, a_length=la, b_length=lb)
        return jnp.sum(w * v) + jnp.sum(w * k)

    grads = jax.grad(loss, argnums=(0, 1, 2, 3))(ak, bk, av, bv)
    perm = ref_merge(ak, bk, a_length=la, b_length=lb)[1]  # output k holds input perm[k]
    dwant = np.zeros((3, 21))
    np.put_along_axis(dwant, perm, np.asarray(w), axis=-1)  # d loss / d input = w at its spot
    for g, want in zip(grads, (dwant[:, :12], dwant[:, 12:], dwant[:, :12], dwant[:, 12:]),
                       strict=True):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6)


def test_merge_by_key_ragged_length_errors():
    k = jnp.zeros((3, 5), jnp.int32)
    with pytest.raises(ValueError, match=r"a_length"):
        jmp.merge_by_key(k, k, k, k, a_length=jnp.zeros((4,), jnp.int32))
    with pytest.raises(TypeError, match=r"b_length"):
        jmp.merge_by_key(k, k, k, k, b_length=jnp.zeros((3,), jnp.float32))


@pytest.mark.requires_gpu
@pytest.mark.parametrize(("m", "n"), [(5, 9), (3000, 2500), (70000, 65000)], ids=str)
def test_merge_by_key_ragged_rows_gpu(rng, m, n):
    rows = 4
    ak, bk = sorted_keys(rng, np.int32, (rows, m)), sorted_keys(rng, np.int32, (rows, n))
    av, bv = rng.integers(0, 2**31, (rows, m)), rng.integers(0, 2**31, (rows, n))
    la, lb = _lengths(rng, rows, m), _lengths(rng, rows, n)
    for a_values, b_values in ((av.astype(np.int32), bv.astype(np.int32)), (av, bv)):
        want_k, want_v = ref_merge_by_key(ak, bk, a_values, b_values, a_length=la, b_length=lb)
        got_k, got_v = jmp.merge_by_key(ak, bk, a_values, b_values, a_length=la, b_length=lb)
        assert_bits_equal(got_k, want_k)
        assert_bits_equal(got_v, want_v)


# ------------------------------------------------------------------------------ packaging


def test_py_typed_ships_with_the_package():
    assert (Path(jmp.__file__).parent / "py.typed").is_file()


def test_quickstart_help_prints_usage_without_the_tour(capsys):
    spec = importlib.util.spec_from_file_location("quickstart", ROOT / "examples" / "quickstart.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and "--seed" in out
    assert "1. one merge" not in out and " ok " not in out
