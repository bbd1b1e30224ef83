# Bad arguments to the sort family raise at trace time (docs/contract.md "Errors"): string and
# object keys, Python lists and tuples given as arrays (as jnp refuses them) -> TypeError naming
# the argument; sort / argsort take descending as jnp does (any value by its truth; traced or
# unhashable -> jnp's ValueError), sort_by_key's descending not a bool -> TypeError; argsort's
# dtype= as jnp's (int64 without x64: int32 with jnp's warning); 0-d inputs,
# axis out of range, values whose shape does not match the keys, lax_sort operands of different
# shapes, num_keys < 1 or > len(operands), searchsorted's side not "left"/"right", mismatched
# batch shapes -> ValueError; axes of 2**31 elements or more give what jnp gives (x64 on: int64
# positions; x64 off: jnp's int32 / OverflowError). Each case is checked on abstract
# inputs (jax.eval_shape: nothing runs) and on concrete ones; messages are checked loosely for
# the argument's name. Good arguments of every dtype trace to the right shapes and dtypes.
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import KEY_DTYPES, assert_bits_equal, dtype_id

import jax_mergepath as jmp

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

S = jax.ShapeDtypeStruct
F32, I32 = jnp.float32, jnp.int32


def _raises_both_ways(exc: type[Exception], match: str, fn: Callable, *specs: Any) -> None:
    """fn raises exc (message matching) on abstract inputs and on concrete zero inputs."""
    with pytest.raises(exc, match=match):
        jax.eval_shape(fn, *specs)
    concrete = jax.tree.map(
        lambda s: jnp.zeros(s.shape, s.dtype) if isinstance(s, jax.ShapeDtypeStruct) else s, specs
    )
    with pytest.raises(exc, match=match):
        fn(*concrete)


def _names(name: str, what: str) -> str:
    """A pattern matching messages that contain the word name AND the pattern what."""
    return rf"(?is)(?=.*\b{name}\b)(?=.*({what}))"


# ------------------------------------------------------------------------------ sort / argsort

SORT_ERRORS = [
    # (id, exception, match, x spec, kwargs)
    ("a_0d", ValueError, r"\ba\b", S((), F32), {}),
    ("a_0d_int", ValueError, r"\ba\b", S((), jnp.int8), {}),
    ("axis_too_big", ValueError, r"(?i)axis", S((2, 5), F32), {"axis": 2}),
    ("axis_too_small", ValueError, r"(?i)axis", S((2, 5), F32), {"axis": -3}),
    ("axis_1d", ValueError, r"(?i)axis", S((5,), F32), {"axis": 1}),
    ("axis_1d_neg", ValueError, r"(?i)axis", S((5,), F32), {"axis": -2}),
    ("descending_array", ValueError, r"descending", S((5,), F32),
     {"descending": np.array(True)}),
]


@pytest.mark.parametrize("fn", [jmp.sort, jmp.argsort], ids=["sort", "argsort"])
@pytest.mark.parametrize(
    ("exc", "match", "x", "kw"), [c[1:] for c in SORT_ERRORS], ids=[c[0] for c in SORT_ERRORS]
)
def test_sort_bad_arguments(fn, exc, match, x, kw):
    _raises_both_ways(exc, match, functools.partial(fn, **kw), x)


@pytest.mark.parametrize("name", ["sort", "argsort"])
def test_descending_as_jnp_takes_it(rng, name):
    """Any value by its truth (jnp's static argument), as jnp.sort / jnp.argsort; traced: jnp's
    ValueError, naming descending and how to make it static."""
    fn, ref = getattr(jmp, name), getattr(jnp, name)
    x = jnp.asarray(rng.integers(0, 5, 40).astype(np.int32))
    for flag in (1, "yes", np.bool_(True), 0, None, ""):
        got = fn(x, descending=flag)
        assert_bits_equal(got, ref(x, descending=flag), f"descending={flag!r}")
        assert_bits_equal(got, fn(x, descending=bool(flag)), f"descending={flag!r}")
    traced = jax.jit(lambda x, d: fn(x, descending=d))
    with pytest.raises(ValueError, match=r"descending.*static_argnames='descending'"):
        traced(x, True)
    with pytest.raises(ValueError):
        jax.jit(lambda x, d: ref(x, descending=d))(x, True)  # (jnp's own)


@pytest.mark.parametrize("fn", [jmp.sort, jmp.argsort, jmp.sort_by_key, jmp.lax_sort],
                         ids=["sort", "argsort", "sort_by_key", "lax_sort"])
@pytest.mark.parametrize("given", [[3, 1, 2], (3, 1, 2), [[3, 1], [2, 0]]],
                         ids=["list", "tuple", "nested"])
def test_python_lists_are_refused(fn, given):
    """A Python list or tuple where an array goes raises jnp's TypeError, naming the argument
    (lax_sort: a list of operands is lax.sort's sequence form; lists inside it are refused)."""
    if fn is jmp.lax_sort:
        with pytest.raises(TypeError, match=r"operand\[0\] must be an array or a scalar"):
            fn([given, np.arange(len(given))])
        return
    args = (given, np.arange(len(given))) if fn is jmp.sort_by_key else (given,)
    name = "keys" if fn is jmp.sort_by_key else "a"
    with pytest.raises(TypeError, match=rf"\b{name} must be an array or a scalar, got a Python"):
        fn(*args)
    if fn is not jmp.sort_by_key:
        with pytest.raises(TypeError):  # (jnp's own)
            getattr(jnp, fn.__name__)(given)


def test_scalars_as_jnp_takes_them():
    """A Python or numpy scalar is an array argument (0-d): sort of one raises jnp's
    ValueError, as jnp.sort; axis=None flattens it, as jnp."""
    for scalar in (3, 2.5, np.float32(1.0)):
        with pytest.raises(ValueError):
            jnp.sort(scalar)
        with pytest.raises(ValueError, match=r"\ba\b"):
            jmp.sort(scalar)
        assert_bits_equal(jmp.sort(scalar, axis=None), jnp.sort(scalar, axis=None))


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_argsort_dtype_as_jnp(x64):
    """argsort(dtype=) as jnp.argsort takes it: int64 without x64 is int32, with jnp's warning
    (naming argsort); other dtypes as asked; what is no dtype raises jnp's error type."""
    x = jnp.array([3, 1, 2])
    with jax.enable_x64(x64):
        for dtype in (jnp.int64, jnp.int16, jnp.uint32, jnp.float32, int):
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always")
                got = jmp.argsort(x, dtype=dtype)
            with warnings.catch_warnings(record=True) as theirs:
                warnings.simplefilter("always")
                want = jnp.argsort(x, dtype=dtype)
            assert_bits_equal(got, want, f"dtype={dtype}")
            assert got.dtype == want.dtype
            assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
            if dtype is jnp.int64 and not x64:
                assert "requested in argsort is not available" in str(ours[0].message)
        for bad in ("foo", x):
            with pytest.raises(Exception) as theirs_err:
                jnp.argsort(x, dtype=bad)
            with pytest.raises(theirs_err.type):
                jmp.argsort(x, dtype=bad)


@pytest.mark.parametrize("fn", [jmp.sort, jmp.argsort], ids=["sort", "argsort"])
@pytest.mark.parametrize(
    "x",
    [np.array(["b", "a"]), np.array([b"b", b"a"]), np.array([1, "a", None], dtype=object)],
    ids=["str", "bytes", "object"],
)
def test_sort_string_and_object_keys(fn, x):
    with pytest.raises(TypeError, match=r"(?i)\ba\b|dtype|type"):
        fn(x)


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize(
    ("fn", "ref"), [(jmp.sort, jnp.sort), (jmp.argsort, jnp.argsort)], ids=["sort", "argsort"]
)
@pytest.mark.parametrize("shape", [(2**31,), (2, 2**31), (2**31 + 5, 1)], ids=str)
def test_sort_axis_longer_than_int32(fn, ref, shape, x64):
    """Axes of 2**31 elements or more trace to jnp's shapes and dtypes (argsort: int64 with x64
    on, jnp's wrapped int32 with it off)."""
    axis = 0 if shape[-1] == 1 else -1
    with jax.enable_x64(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (x64 off: jax's "int64 is not available" warning)
        got = jax.eval_shape(functools.partial(fn, axis=axis), S(shape, jnp.int8))
        want = jax.eval_shape(functools.partial(ref, axis=axis), S(shape, jnp.int8))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


def test_sort_axis_just_fits_int32():
    out = jax.eval_shape(jmp.argsort, S((2**31 - 1,), jnp.int8))
    assert out.shape == (2**31 - 1,) and out.dtype == jnp.int64
    out = jax.eval_shape(jmp.sort, S((2, 2**31 - 1), jnp.int8))
    assert out.shape == (2, 2**31 - 1) and out.dtype == jnp.int8


def test_sort_errors_under_jit_and_vmap():
    with pytest.raises(ValueError):
        jax.vmap(jmp.sort)(jnp.zeros((3,), F32))  # 0-d per example
    with pytest.raises(ValueError):
        jax.vmap(jmp.argsort)(jnp.zeros((3,), I32))
    with pytest.raises(ValueError, match=r"(?i)axis"):
        jax.jit(functools.partial(jmp.sort, axis=5))(jnp.zeros((3, 5), F32))
    with pytest.raises(ValueError, match=r"(?i)axis"):
        jax.vmap(functools.partial(jmp.argsort, axis=1))(jnp.zeros((3, 5), F32))


# ------------------------------------------------------------------------------ sort_by_key

SBK_ERRORS = [
    # (id, exception, match, (keys spec, values specs), kwargs)
    ("keys_0d", ValueError, r"keys", (S((), F32), S((), F32)), {}),
    ("values_length", ValueError, r"values", (S((5,), F32), S((4,), F32)), {}),
    ("values_batch", ValueError, r"values", (S((3, 5), F32), S((2, 5), F32)), {}),
    ("values_fewer_dims", ValueError, r"values", (S((3, 5), F32), S((5,), F32)), {}),
    ("values_0d", ValueError, r"values", (S((5,), F32), S((), F32)), {}),
    ("values_leaf_in_tree", ValueError, r"values",
     (S((5,), F32), {"a": S((5, 3), F32), "b": S((4,), I32)}), {}),
    ("values_axis0_trailing", ValueError, r"values",
     (S((5, 3), F32), S((5, 2), F32)), {"axis": 0}),
    ("axis", ValueError, r"(?i)axis", (S((2, 5), F32), S((2, 5), F32)), {"axis": 2}),
    ("axis_neg", ValueError, r"(?i)axis", (S((2, 5), F32), S((2, 5), F32)), {"axis": -3}),
    ("descending", TypeError, r"descending", (S((5,), F32), S((5,), F32)),
     {"descending": "no"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "match", "specs", "kw"), [c[1:] for c in SBK_ERRORS], ids=[c[0] for c in SBK_ERRORS]
)
def test_sort_by_key_bad_arguments(exc, match, specs, kw):
    _raises_both_ways(exc, match, functools.partial(jmp.sort_by_key, **kw), *specs)


def test_sort_by_key_string_keys_and_long_axis():
    with pytest.raises(TypeError, match=r"keys has dtype <U1"):
        jmp.sort_by_key(np.array(["b", "a"]), np.arange(2))
    # string values: the message names values, and lists key dtypes only as keys'
    with pytest.raises(TypeError, match=r"values has dtype <U1.*numeric or bool arrays only; "
                       r"keys may be: bfloat16"):
        jmp.sort_by_key(np.arange(2), np.array(["b", "a"]))
    # an axis of 2**31 elements: values shaped like the keys move in lax.sort with x64 on or
    # off; values to be gathered need int64 positions
    k, v = jax.eval_shape(jmp.sort_by_key, S((2**31,), jnp.int8), S((2**31,), jnp.int8))
    assert (k.shape, v.dtype) == ((2**31,), jnp.int8)
    with jax.enable_x64(False), pytest.raises(ValueError, match=r"jax_enable_x64"):
        jax.eval_shape(jmp.sort_by_key, S((2**31,), jnp.int8), S((2**31, 2), jnp.int8))


# ------------------------------------------------------------------------------ lax_sort

LAX_ERRORS = [
    # (id, exception, match, operand specs, kwargs)
    ("num_keys_0", ValueError, r"num_keys", [S((5,), F32), S((5,), I32)], {"num_keys": 0}),
    ("num_keys_neg", ValueError, r"num_keys", [S((5,), F32)], {"num_keys": -1}),
    ("num_keys_too_many", ValueError, r"num_keys", [S((5,), F32), S((5,), I32)],
     {"num_keys": 3}),
    ("shapes_differ", ValueError, r"(?i)shape", [S((5,), F32), S((4,), I32)], {}),
    ("shapes_differ_batch", ValueError, r"(?i)shape", [S((2, 5), F32), S((3, 5), I32)], {}),
    ("ndim_differ", ValueError, r"(?i)shape", [S((2, 5), F32), S((5,), I32)], {}),
    ("dimension_too_big", ValueError, r"(?i)dimension|axis", [S((2, 5), F32)],
     {"dimension": 2}),
    ("dimension_too_small", ValueError, r"(?i)dimension|axis", [S((2, 5), F32)],
     {"dimension": -3}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "match", "specs", "kw"), [c[1:] for c in LAX_ERRORS], ids=[c[0] for c in LAX_ERRORS]
)
def test_lax_sort_bad_arguments(exc, match, specs, kw):
    _raises_both_ways(exc, match, lambda *ops: jmp.lax_sort(ops, **kw), *specs)


def test_lax_sort_single_array_errors():
    with pytest.raises(TypeError):
        jmp.lax_sort(np.array(["b", "a"]))
    out = jax.eval_shape(jmp.lax_sort, S((2**31,), jnp.int8))  # (lax.sort of its order keys)
    assert (out.shape, out.dtype) == ((2**31,), jnp.int8)
    with pytest.raises(ValueError, match=r"(?i)dimension|axis"):
        jax.eval_shape(functools.partial(jmp.lax_sort, dimension=1), S((5,), F32))


# ------------------------------------------------------------------------------ searchsorted

SS_ERRORS = [
    # (id, exception, match, a spec, v spec, kwargs)
    ("side_middle", ValueError, r"side", S((5,), F32), S((3,), F32), {"side": "middle"}),
    ("side_upper", ValueError, r"side", S((5,), F32), S((3,), F32), {"side": "LEFT"}),
    ("a_0d", ValueError, r"\ba\b", S((), F32), S((3,), F32), {}),
    ("batch_mismatch", ValueError, r"(?i)batch|shape|dim", S((3, 10), F32), S((4, 5), F32), {}),
    ("v_missing_batch", ValueError, r"(?i)batch|shape|dim", S((3, 4, 10), F32), S((3,), F32),
     {}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "match", "a", "v", "kw"), [c[1:] for c in SS_ERRORS], ids=[c[0] for c in SS_ERRORS]
)
def test_searchsorted_bad_arguments(exc, match, a, v, kw):
    _raises_both_ways(exc, match, functools.partial(jmp.searchsorted, **kw), a, v)
    if "side" not in kw:
        _raises_both_ways(exc, match, functools.partial(jmp.searchsorted, sorted_v=True, **kw),
                          a, v)  # fmt: skip


def test_searchsorted_long_a():
    """jnp.searchsorted's dtype (int64) with x64 on; with x64 off its warning and OverflowError,
    jnp's message first (lax_numpy_test testSearchsortedDtype matches it), then ours naming a."""
    out = jax.eval_shape(jmp.searchsorted, S((2**31,), jnp.int8), S((3,), jnp.int8))
    assert (out.shape, out.dtype) == ((3,), jnp.int64)
    with jax.enable_x64(False), pytest.raises(
        OverflowError,
        match=r"^Python integer 2147483648 out of bounds.*searchsorted: a's sorted axis has",
    ), pytest.warns(UserWarning, match="Explicitly requested dtype.*int64"):
        jax.eval_shape(jmp.searchsorted, S((2**31,), jnp.int8), S((3,), jnp.int8))


@pytest.mark.parametrize("arg", ["a", "v", "sorter"])
def test_searchsorted_python_lists_are_refused(arg):
    """As jnp.searchsorted: a list for a, v or sorter raises a TypeError (naming it); a
    Python scalar v is a query."""
    args = {"a": jnp.array([1, 2, 3]), "v": jnp.array([2]), "sorter": jnp.array([0, 1, 2])}
    args[arg] = [1, 2, 3] if arg != "sorter" else [0, 1, 2]
    with pytest.raises(TypeError):
        jnp.searchsorted(**args)
    with pytest.raises(TypeError, match=rf"searchsorted: {arg} must be an array or a scalar"):
        jmp.searchsorted(**args)
    assert_bits_equal(jmp.searchsorted(jnp.array([1, 2, 3]), 2),
                      jnp.searchsorted(jnp.array([1, 2, 3]), 2))


# ------------------------------------------------------------------------------ good arguments


@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=dtype_id)
def test_good_arguments_trace(dtype):
    """The checks reject only bad arguments: every key dtype traces, with the right outputs."""
    x = S((3, 7), dtype)
    out = jax.eval_shape(jmp.sort, x)
    assert out.shape == (3, 7) and out.dtype == dtype
    out = jax.eval_shape(functools.partial(jmp.argsort, axis=0, descending=True), x)
    assert out.shape == (3, 7) and out.dtype == jnp.int64  # (x64 on: conftest)
    k, v = jax.eval_shape(
        jmp.sort_by_key, x, {"c": S((3, 7, 2), jnp.complex64), "b": S((3, 7), jnp.bool_)}
    )
    assert k.shape == (3, 7) and k.dtype == dtype
    assert v["c"].shape == (3, 7, 2) and v["c"].dtype == jnp.complex64
    outs = jax.eval_shape(
        lambda a, b, c: jmp.lax_sort((a, b, c), num_keys=2), x, S((3, 7), F32),
        S((3, 7), jnp.complex128),
    )  # fmt: skip
    assert [o.dtype for o in outs] == [dtype, F32, jnp.complex128]
    out = jax.eval_shape(jmp.searchsorted, x, S((3, 2, 5), dtype))
    assert out.shape == (3, 2, 5) and out.dtype == jnp.int32
    out = jax.eval_shape(jmp.searchsorted, S((7,), dtype), S((), dtype))
    assert out.shape == () and out.dtype == jnp.int32
