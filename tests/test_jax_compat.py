# JAX's own sort tests, routed to jax_mergepath. The cases are those of jax 0.10.2's
# tests/lax_numpy_test.py (testSort, testSortStableDescending, testSortComplex, testLexsort,
# testArgsort, testArgsortDtype, testArgsortUnstable, testSearchsorted, testSearchsortedDtype,
# testSearchsortedNans), tests/lax_test.py (testSort, testSortAgainstNumpy,
# testSortFloatSpecialValues, testSortKeyVal, testSortKeyValAgainstNumpy, testSortNumKeys),
# tests/lax_autodiff_test.py (testSortGrad, testSortKeyValGrad) and tests/lax_vmap_test.py
# (testSort), written anew: every case calls the jmp function and the jnp / lax function with
# the same arguments and asserts identical results (array type, dtype, weak type, shape, and
# bits, so -0.0 and NaN payloads count).
#
# Every test runs twice, jax_enable_x64 off and on (the autouse `x64` fixture); inputs are built
# in the dtype JAX holds in that mode (int64 -> int32 with x64 off, ...).
# Inputs hold no subnormal floats: XLA's CPU sort compares them as zeros, the package orders them
# as the numbers they are (docs/contract.md); that difference is tested against numpy elsewhere.
# Nor NaN bit patterns that XLA's CPU sort rewrites (bfloat16 and three float8 types: see
# _nans_sort_keeps); the package returns the input's bits.
# Where jnp / lax allow an unstable sort (stable=False, is_stable=False) the expected answer is
# jnp's stable one: a stable answer is valid there, and the package always sorts stably.
# jnp.searchsorted's methods must all give one answer; the reference is method="compare_all"
# (jnp's "scan" misplaces NaN queries in float8_e5m2 keys on the CPU, jax 0.10.2).
# The method forms (x.sort(), x.argsort(), x.searchsorted()) are jax.Array's own and cannot be
# routed to the package: those cases check that jmp.f(x, ...) equals x.f(...).
# Speed: JAX's tests sweep shapes x axes x dtypes x flags, one compile per call. Here each test
# runs all its calls, the package's and jax's, in one jax.jit (check_calls: one compile a
# test), each (shape, axis) sweep takes one dtype in turn, and every dtype gets a sweep of its
# own.
from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import jax_mergepath as jmp

pytestmark = pytest.mark.slow  # the slow tier (98 s of test time on 2 cores)

# Every key dtype jnp.sort takes on the CPU (jnp.sort rejects int2, uint2, float4_e2m1fn there).
SORT_DTYPES: list[np.dtype] = [
    np.dtype(t)
    for t in (
        np.bool_,
        jnp.int4, np.int8, np.int16, np.int32, np.int64,
        jnp.uint4, np.uint8, np.uint16, np.uint32, np.uint64,
        jnp.float8_e3m4, jnp.float8_e4m3, jnp.float8_e4m3b11fnuz, jnp.float8_e4m3fn,
        jnp.float8_e4m3fnuz, jnp.float8_e5m2, jnp.float8_e5m2fnuz, jnp.float8_e8m0fnu,
        np.float16, jnp.bfloat16, np.float32, np.float64,
        np.complex64, np.complex128,
    )
]  # fmt: skip
REAL_FLOAT_DTYPES = [d for d in SORT_DTYPES if jnp.issubdtype(d, jnp.floating)]
NUMBER_DTYPES = [d for d in SORT_DTYPES if d != np.bool_]

NO_AXIS = "default"  # the axis argument left out
# JAX's nonzerodim_shapes: every non-scalar shape of its suite, empty ones included.
NONEMPTY_SHAPES = [(4,), (3, 4), (3, 1), (1, 4), (2, 1, 4), (2, 3, 4)]
NONZERODIM_SHAPES = [*NONEMPTY_SHAPES, (0,), (0, 4), (3, 0)]

Data = dict[str, Any]
# name -> (the package's call, jnp's / lax's call), both taking the test's Data.
Calls = dict[str, tuple[Callable[[Data], Any], Callable[[Data], Any]]]


@pytest.fixture(autouse=True, params=[False, True], ids=["x64_off", "x64_on"])
def x64(request: pytest.FixtureRequest) -> Iterator[bool]:
    """Runs the test with jax_enable_x64 off, then on."""
    with jax.enable_x64(request.param):
        yield request.param


# ----------------------------------------------------------------------------- helpers


def _id(x: Any) -> str:
    if isinstance(x, np.dtype):
        return x.name
    if isinstance(x, tuple):
        return "x".join(map(str, x)) or "0d"
    return str(x)


def _held(dtype: Any) -> np.dtype:
    """dtype as JAX holds it in the current x64 mode (64-bit types are 32-bit with x64 off)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(dtype))


def _set_where(base: np.ndarray, mask: np.ndarray, other: np.ndarray) -> np.ndarray:
    out = base.copy()
    out[mask] = other[mask]
    return out


def _keys(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Keys of dtype (as held in the current x64 mode): half random bit patterns over the whole
    range, half drawn from a few values, so ties are common; floats hold +-0.0, +-inf and NaNs of
    both signs and several payloads, never a subnormal; complex keys tie often in the real part."""
    dt = _held(dtype)
    shape = tuple(shape)
    if dt.kind == "c":
        out = np.empty(shape, dt)
        out.real = _keys(rng, np.dtype(f"f{dt.itemsize // 2}"), shape)
        out.imag = _keys(rng, np.dtype(f"f{dt.itemsize // 2}"), shape)
        return out
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    few = rng.random(shape) < 0.5
    if jnp.issubdtype(dt, jnp.integer):
        info = ml_dtypes.iinfo(dt)
        wide_t = np.int64 if info.min < 0 else np.uint64
        wide = rng.integers(int(info.min), int(info.max), shape, dtype=wide_t, endpoint=True)
        pool = {int(info.min), int(info.max), 0, 1, 2} | ({-1} if info.min < 0 else set())
        picks = rng.choice(np.array(sorted(pool), dtype=wide_t), shape)
        return _set_where(wide.astype(dt), few, picks.astype(dt))
    ubits = np.dtype(f"u{dt.itemsize}")
    wide = rng.integers(0, 2 ** (8 * dt.itemsize) - 1, shape, dtype=ubits, endpoint=True).view(dt)
    with np.errstate(all="ignore"):  # float8 types without inf / NaN / negatives saturate
        pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, -np.nan])
        pool = pool.astype(dt)
    payload = (np.array(np.nan).astype(dt).view(ubits) ^ 1).view(dt)  # a NaN, another payload
    pool = np.concatenate([pool, payload.reshape(1)])
    out = _set_where(wide, few, rng.choice(pool, shape))
    with np.errstate(all="ignore"):
        f = out.astype(np.float64)
        # XLA:CPU compares narrow floats as float16 and flushes float16 subnormals: values
        # below float16's smallest normal (normal in the float8 types with 5 exponent bits)
        # would tie in jnp's CPU sort and not in ours.
        tiny = max(float(ml_dtypes.finfo(dt).smallest_normal),
                   float(ml_dtypes.finfo(np.float16).smallest_normal) if dt.itemsize < 2 else 0.0)
        subnormal = np.isfinite(f) & (f != 0) & (np.abs(f) < tiny)
    return _kept_nans(_set_where(out, subnormal, np.full(shape, pool[2])))


def _kept_nans(x: np.ndarray) -> np.ndarray:
    """x with every NaN that jnp.sort would rewrite replaced by one it keeps (of the same sign
    where there is one)."""
    kept = _nans_sort_keeps(x.dtype) if jnp.issubdtype(x.dtype, jnp.floating) else None
    if kept is None:
        return x
    ubits = kept.dtype
    sign = np.array(1 << (8 * ubits.itemsize - 1), ubits)
    bits = x.view(ubits)
    same_sign = [kept[(kept & sign) == s] for s in (0, sign)]
    pick = [(c if c.size else kept)[0] for c in same_sign]
    replacement = np.where(bits & sign, pick[1], pick[0]).astype(ubits)
    rewritten = np.isnan(x.astype(np.float32)) & ~np.isin(bits, kept)
    return _set_where(bits, rewritten, replacement).view(x.dtype)


@functools.cache
def _nans_sort_keeps(dtype: np.dtype) -> np.ndarray | None:
    """The NaN bit patterns of a 1- or 2-byte float dtype that jnp.sort gives back as they came
    (None for wider dtypes: jnp.sort keeps every float32 / float64 NaN). XLA's CPU sort rewrites
    the NaNs of bfloat16, float8_e3m4, float8_e4m3 and float8_e5m2 to one or two patterns, in
    keys and in moved operands alike; the package returns the input's bits, so inputs hold only
    the patterns XLA writes."""
    if dtype.itemsize > 2:
        return None
    ubits = np.dtype(f"u{dtype.itemsize}")
    every = np.arange(2 ** (8 * dtype.itemsize), dtype=np.uint32).astype(ubits).view(dtype)
    nans = every[np.isnan(every.astype(np.float32))]
    with jax.default_device(jax.devices("cpu")[0]):  # the references run there (_run)
        return np.unique(np.asarray(jnp.sort(jnp.asarray(nans))).view(ubits))


def _bytes(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8)


def assert_same(got: Any, want: Any, what: str = "") -> None:
    """got and want are the same pytree of jax arrays: dtype, weak type, shape and bits."""
    got_leaves, got_tree = jax.tree.flatten(got)
    want_leaves, want_tree = jax.tree.flatten(want)
    assert got_tree == want_tree, f"{what}: structure {got_tree} != {want_tree}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        where = f"{what}[{i}]" if len(want_leaves) > 1 else what
        assert isinstance(g, jax.Array), f"{where}: got a {type(g).__name__}, not a jax.Array"
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype} != {w.dtype}"
        assert g.weak_type == w.weak_type, f"{where}: weak_type {g.weak_type} != {w.weak_type}"
        assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
        gn, wn = np.asarray(g), np.asarray(w)
        np.testing.assert_array_equal(
            _bytes(gn), _bytes(wn), err_msg=f"{where}: bits differ\ngot  {gn}\nwant {wn}"
        )


def _run(calls: Calls, data: Data) -> dict[str, tuple[Any, Any]]:
    """The package's calls on the default device, jnp's (the references) on the CPU: XLA:GPU
    fails to compile jnp's stable sort of int4 / int2 / float4 keys and rewrites bfloat16 and
    float8 NaN payloads (the package keeps them, on both backends)."""
    ours = jax.jit(lambda d: {name: f(d) for name, (f, _) in calls.items()})(data)
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        refs = jax.jit(lambda d: {name: g(d) for name, (_, g) in calls.items()})(
            jax.device_put(data, cpu)
        )
    return {name: (ours[name], refs[name]) for name in calls}


def check_calls(calls: Calls, data: Data) -> None:
    """Runs every pair of calls in one jax.jit (one compile for the lot), then compares each
    package result with its reference by assert_same, reporting every mismatch. When the lot
    does not trace, each call is traced alone (jax.eval_shape) to name every one that raises,
    and the others still run."""
    failures = []
    try:
        both = _run(calls, data)
    except Exception:
        good: Calls = {}
        for name, (f, g) in calls.items():
            try:
                jax.eval_shape(lambda d, f=f, g=g: (f(d), g(d)), data)
                good[name] = (f, g)
            except Exception as e:  # reported below, with every other failing call
                failures.append(f"{name}: raised {type(e).__name__}: {e}".split("\n")[0])
        both = _run(good, data) if good else {}
    for name, (got, want) in both.items():
        try:
            assert_same(got, want, name)
        except AssertionError as e:
            failures.append(str(e).strip())
    if failures:
        raise AssertionError(f"{len(failures)} of {len(calls)} calls fail:\n" + "\n".join(failures))


def _axis_kw(axis: Any) -> dict:
    return {} if axis == NO_AXIS else {"axis": axis}


def _axes(ndim: int) -> list:
    """JAX's axes for a sort test: left out, None (flatten), and every axis."""
    return [NO_AXIS, None, *range(-ndim, ndim)]


def _rotation(base: list, dtypes: list[np.dtype], offset: int = 0) -> list:
    """One pytest.param per base case, each taking the next dtype of `dtypes` in turn."""
    out = []
    for i, case in enumerate(base):
        dtype = dtypes[(i + offset) % len(dtypes)]
        out.append(pytest.param(*case, dtype, id="-".join(_id(c) for c in (*case, dtype))))
    return out


# ----------------------------------------------------------------------------- every dtype


def _stable_descending_example(dtype: np.dtype) -> np.ndarray:
    """lax_numpy_test testSortStableDescending's keys, with -0.0 and a NaN of each sign."""
    x = np.array([0, 1, np.nan, -0.0, 2, -np.nan, -np.inf, np.inf, 0, np.nan, -0.0, 1])
    with np.errstate(all="ignore"):
        return _kept_nans(x.astype(dtype))


@pytest.mark.parametrize("dtype", SORT_DTYPES, ids=_id)
def test_every_dtype(x64, rng, dtype):
    """Every key dtype jnp.sort takes, through every function:
    jnp.sort / jnp.argsort along the rows, both directions (sort descending is the
    reverse of the ascending sort, ties included; argsort keeps ties in input order both ways:
    lax_numpy_test testSortStableDescending's keys lead row 0 of float inputs), int64
    positions with x64 on;
    lax_test testSort / testSortAgainstNumpy (one operand, shapes (5,) and (5, 7), dimension
    -1 and ndim - 1, stable or not), testSortNumKeys (the rows of a (3, 5) array as operands,
    sorted by the first num_keys), testSortKeyVal / testSortKeyValAgainstNumpy (keys (3,) and
    (5, 3), values uint32 / float32, ties included: the stable answer is expected) and
    testSortFloatSpecialValues (-inf, 0.0, -0.0, inf, NaN, -NaN are in order: the values come
    back unmoved); positional and keyword arguments. All in one compile."""
    if not x64 and _held(dtype) != dtype:
        pytest.skip(f"with x64 off {dtype.name} is {_held(dtype).name}, swept on its own")
    x = _keys(rng, dtype, (6, 40))
    if jnp.issubdtype(x.dtype, jnp.floating):
        x[0, :12] = _stable_descending_example(x.dtype)
    data: Data = {"x": jnp.asarray(x)}
    calls: Calls = {}
    for name, descending in itertools.product(["sort", "argsort"], [False, True]):

        def got(d, name=name, descending=descending):
            return getattr(jmp, name)(d["x"], descending=descending)

        def want(d, name=name, descending=descending):
            return getattr(jnp, name)(d["x"], descending=descending)

        calls[f"{name}(descending={descending})"] = (got, want)
    # (dimension -1 and ndim - 1 are one axis: the positional call takes one, the keyword call
    # the other; the stable flag alternates the same way.)
    for shape in [(5,), (5, 7)]:
        k, last = f"x{shape}", len(shape) - 1
        data[k] = jnp.asarray(_keys(rng, dtype, shape))
        calls[f"lax_sort({k}, -1, False)"] = (
            lambda d, k=k: jmp.lax_sort(d[k], -1, False),
            lambda d, k=k: lax.sort(d[k], -1, True),
        )
        calls[f"lax_sort({k}, dimension={last}, is_stable=True)"] = (
            lambda d, k=k, n=last: jmp.lax_sort(d[k], dimension=n, is_stable=True),
            lambda d, k=k, n=last: lax.sort(d[k], dimension=n, is_stable=True),
        )
    data["rows"] = jnp.asarray(_keys(rng, dtype, (3, 5)))
    for num_keys in (1, 2, 3):
        calls[f"lax_sort(rows of (3, 5), num_keys={num_keys})"] = (
            lambda d, n=num_keys: jmp.lax_sort(tuple(d["rows"]), num_keys=n),
            lambda d, n=num_keys: lax.sort(tuple(d["rows"]), num_keys=n),
        )
    # (JAX's three 4-byte value dtypes move alike: one a shape here; test_sort_key_val_values
    # takes every value dtype.)
    for shape, val_dtype in [((3,), np.uint32), ((5, 3), np.float32)]:
        k, v = f"keys{shape}", f"values{shape}{np.dtype(val_dtype).name}"
        last = len(shape) - 1
        data[k] = jnp.asarray(_keys(rng, dtype, shape))
        data[v] = jnp.asarray(_keys(rng, val_dtype, shape))
        calls[f"sort_key_val({k}, {v}, {last}, False)"] = (
            lambda d, k=k, v=v, n=last: jmp.sort_key_val(d[k], d[v], n, False),
            lambda d, k=k, v=v, n=last: lax.sort_key_val(d[k], d[v], n, True),
        )
        calls[f"sort_key_val({k}, {v}, dimension=-1, is_stable=True)"] = (
            lambda d, k=k, v=v: jmp.sort_key_val(d[k], d[v], dimension=-1, is_stable=True),
            lambda d, k=k, v=v: lax.sort_key_val(d[k], d[v], dimension=-1, is_stable=True),
        )
    if jnp.issubdtype(dtype, jnp.floating):
        with np.errstate(all="ignore"):
            special = np.array([-np.inf, 0.0, -0.0, np.inf, np.nan, -np.nan]).astype(_held(dtype))
            special = _kept_nans(special)
        data["special"] = jnp.asarray(special)
        calls["sort_key_val(special values, iota)"] = (
            lambda d: jmp.sort_key_val(d["special"], lax.iota(int, 6), is_stable=True),
            lambda d: lax.sort_key_val(d["special"], lax.iota(int, 6), is_stable=True),
        )
    check_calls(calls, data)


# ----------------------------------------------------------------------------- jnp.sort


def _sort_calls(name: str, shape: tuple[int, ...]) -> Calls:
    """jmp.<name> (sort or argsort) against jnp.<name>(stable=True) and the method form
    x.<name>(...): every axis (left out, None, each one), stable or not, both directions, and
    the axis passed positionally."""
    ours, theirs = getattr(jmp, name), getattr(jnp, name)
    calls: Calls = {}
    for axis, stable, descending in itertools.product(
        _axes(len(shape)), [True, False], [False, True]
    ):
        kw = _axis_kw(axis)

        def got(d, kw=kw, stable=stable, descending=descending):
            flag = {} if stable else {"stable": False}  # (True: the default, left out)
            return ours(d["x"], **kw, **flag, descending=descending)

        def want(d, kw=kw, descending=descending):
            return theirs(d["x"], **kw, stable=True, descending=descending)

        def method(d, kw=kw, descending=descending):
            return getattr(d["x"], name)(**kw, stable=True, descending=descending)

        calls[f"{name}({kw}, stable={stable}, descending={descending})"] = (got, want)
        if stable:
            calls[f"x.{name}({kw}, descending={descending})"] = (got, method)
        if isinstance(axis, int) and not (stable or descending):
            calls[f"{name}(x, {axis})"] = (
                lambda d, a=axis: ours(d["x"], a),
                lambda d, a=axis: theirs(d["x"], a),
            )
    return calls


@pytest.mark.parametrize("shape,dtype", _rotation([(s,) for s in NONZERODIM_SHAPES], SORT_DTYPES))
def test_sort(rng, shape, dtype):
    """lax_numpy_test testSort: every axis (left out, None: flattened, each one), stable or not,
    both directions, positional axis; the method form x.sort(...); testSortComplex:
    jnp.sort_complex(x) is sort(x) cast to a complex dtype."""
    calls = _sort_calls("sort", shape)

    def complex_sort(d):
        out = jmp.sort(d["x"])
        return out.astype(jax.eval_shape(jnp.sort_complex, d["x"]).dtype)

    calls["sort_complex"] = (complex_sort, lambda d: jnp.sort_complex(d["x"]))
    check_calls(calls, {"x": jnp.asarray(_keys(rng, dtype, shape))})


# ----------------------------------------------------------------------------- jnp.argsort


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")  # argsort(dtype=int64), x64 off
@pytest.mark.parametrize(
    "shape,dtype", _rotation([(s,) for s in NONZERODIM_SHAPES], SORT_DTYPES, offset=12)
)
def test_argsort(rng, shape, dtype):
    """lax_numpy_test testArgsort, testArgsortUnstable, testArgsortDtype: every axis, both
    directions (ties in input order both ways), stable or not (the stable answer is expected),
    positional axis, dtype= (int16, uint32, int64: truncated to int32 with x64 off, as jnp
    does); the method form x.argsort(...)."""
    calls = _sort_calls("argsort", shape)
    for index_dtype in (np.int16, np.uint32, np.int64):
        calls[f"argsort(dtype={np.dtype(index_dtype).name})"] = (
            lambda d, t=index_dtype: jmp.argsort(d["x"], dtype=t),
            lambda d, t=index_dtype: jnp.argsort(d["x"], dtype=t),
        )
    check_calls(calls, {"x": jnp.asarray(_keys(rng, dtype, shape))})


# ----------------------------------------------------------------------------- jnp.searchsorted

SEARCH_METHODS = ["scan", "scan_unrolled", "sort", "compare_all"]


def _queries(rng: np.random.Generator, a: np.ndarray, dtype: Any, shape) -> np.ndarray:
    """Queries of a's dtype: half of them elements of a (exact hits, ties), half fresh keys."""
    fresh = _keys(rng, dtype, shape)
    if a.size == 0:
        return fresh
    hits = rng.choice(a.reshape(-1), shape)
    return _set_where(fresh, rng.random(shape) < 0.5, np.asarray(hits, fresh.dtype))


@pytest.mark.parametrize(
    "ashape,vshape,dtype",
    _rotation(list(itertools.product([(15,), (16,), (17,)], [(), (5,), (5, 5)])), NUMBER_DTYPES),
)
def test_searchsorted(rng, ashape, vshape, dtype):
    """lax_numpy_test testSearchsorted: both sides, every method, with and without a sorter,
    keyword and positional (a, v, side, sorter); the method form a.searchsorted(...)."""
    with jax.default_device(jax.devices("cpu")[0]):  # XLA:GPU fails on jnp.sort of int4
        keys = jnp.asarray(_keys(rng, dtype, ashape))
        data = {
            "keys": keys,
            "a": jnp.sort(keys),
            "sorter": jnp.argsort(keys).astype(np.int32),
            "v": jnp.asarray(_queries(rng, np.asarray(keys), dtype, vshape)),
        }
    data = jax.device_put(data, jax.devices()[0])
    calls: Calls = {}
    for use_sorter, side in itertools.product([False, True], ["left", "right"]):

        def args(d, use_sorter=use_sorter):
            return (d["keys"], d["v"], d["sorter"]) if use_sorter else (d["a"], d["v"], None)

        def want(d, args=args, side=side):
            a, v, sorter = args(d)
            return jnp.searchsorted(a, v, side=side, sorter=sorter, method="compare_all")

        def method_form(d, args=args, side=side):
            a, v, sorter = args(d)
            return a.searchsorted(v, side=side, sorter=sorter, method="compare_all")

        for method in SEARCH_METHODS:

            def got(d, args=args, side=side, method=method):
                a, v, sorter = args(d)
                return jmp.searchsorted(a, v, side=side, sorter=sorter, method=method)

            what = f"searchsorted(side={side}, sorter={use_sorter}, method={method})"
            calls[what] = (got, want)
        calls[f"a.searchsorted(side={side}, sorter={use_sorter})"] = (got, method_form)
        calls[f"searchsorted(a, v, {side!r}, sorter={use_sorter}) positional"] = (
            lambda d, args=args, side=side: jmp.searchsorted(*args(d)[:2], side, args(d)[2]),
            want,
        )
    check_calls(calls, data)


def _keeps_order(dtype: np.dtype) -> bool:
    """Whether testSearchsortedNans's keys stay distinct and sorted in dtype (float8 types
    without inf, -0.0 or negatives merge some of them: a is then not sorted)."""
    x = np.array([-np.inf, -1.0, 0.0, 1.0, np.inf])
    with np.errstate(all="ignore"):
        return bool(np.array_equal(x.astype(dtype).astype(np.complex128).real, x))


@pytest.mark.parametrize(
    "dtype",
    [d for d in SORT_DTYPES if jnp.issubdtype(d, jnp.inexact) and _keeps_order(d)],
    ids=_id,
)
def test_searchsorted_nans(dtype):
    """lax_numpy_test testSearchsortedNans: -inf, -1, 0, -0.0, 1, inf, NaN, -NaN (each pair of
    real and imaginary parts for complex, sorted) are searched as 0, 1, 2, 2, 3, 4, 5, 5:
    -0.0 == 0.0 and every NaN is one value, last."""
    dt = _held(dtype)
    x = np.array([-np.inf, -1.0, 0.0, -0.0, 1.0, np.inf, np.nan, -np.nan])
    x_equiv = np.array([0, 1, 2, 2, 3, 4, 5, 5])
    if dt.kind == "c":
        x = np.array([complex(r, i) for r, i in itertools.product(x, repeat=2)])
        x_equiv = np.array([complex(r, i) for r, i in itertools.product(x_equiv, repeat=2)])
        # JAX's pairs are not in lexicographic order (a must be sorted: JAX skips complex);
        # the order of x_equiv (numpy's, lexicographic) is x's too.
        order = np.argsort(x_equiv, kind="stable")
        x, x_equiv = x[order], x_equiv[order]
    calls: Calls = {}
    for side, method in itertools.product(["left", "right"], SEARCH_METHODS):
        calls[f"searchsorted(side={side}, method={method})"] = (
            lambda d, s=side, m=method: jmp.searchsorted(d["x"], d["x"], side=s, method=m),
            lambda d, s=side: jnp.searchsorted(d["eq"], d["eq"], side=s, method="compare_all"),
        )
    check_calls(calls, {"x": jnp.asarray(x.astype(dt)), "eq": jnp.asarray(x_equiv.astype(dt))})


def test_searchsorted_promotion(rng):
    """a and v promote to one dtype as jnp.searchsorted promotes them (Python scalars weakly)."""
    cases = {
        "int32 a, Python float v": (np.int32, 2.5),
        "float16 a, Python int v": (np.float16, 3),
        "bool a, Python bool v": (np.bool_, True),
        "int8 a, int16 v": (np.int8, np.array([1, 2, -7], np.int16)),
        "float32 a, int32 v": (np.float32, np.array([[1, 2], [0, -3]], np.int32)),
    }
    data, calls = {}, {}
    for name, (a_dtype, v) in cases.items():
        data[name] = jnp.sort(jnp.asarray(_keys(rng, a_dtype, (9,))))
        for side in ("left", "right"):
            calls[f"{name}, side={side}"] = (
                lambda d, n=name, v=v, s=side: jmp.searchsorted(d[n], v, s),
                lambda d, n=name, v=v, s=side: jnp.searchsorted(d[n], v, s),
            )
    check_calls(calls, data)


# ----------------------------------------------------------------------------- lax.sort


def test_sort_key_val_values(rng):
    """lax_test testSortKeyVal's value dtypes (float32, int32, uint32) and every other width the
    values may have (1, 2, 8 and 16 bytes, bool), keys (3,) and (5, 3), each pair with the next
    key dtype, stable or not."""
    value_dtypes = [
        np.float32,
        np.int32,
        np.uint32,
        np.int8,
        np.bool_,
        np.float16,
        jnp.bfloat16,
        np.int64,
        np.float64,
        np.complex64,
        np.complex128,
    ]
    data: Data = {}
    calls: Calls = {}
    for i, (val_dtype, shape) in enumerate(itertools.product(value_dtypes, [(3,), (5, 3)])):
        key_dtype = NUMBER_DTYPES[(5 * i) % len(NUMBER_DTYPES)]
        name = f"keys {key_dtype.name}{shape}, values {np.dtype(val_dtype).name}"
        data[f"k {name}"] = jnp.asarray(_keys(rng, key_dtype, shape))
        data[f"v {name}"] = jnp.asarray(_keys(rng, val_dtype, shape))
        is_stable = i % 2 == 0
        calls[f"sort_key_val({name}, is_stable={is_stable})"] = (
            lambda d, n=name, s=is_stable: jmp.sort_key_val(d[f"k {n}"], d[f"v {n}"], -1, s),
            lambda d, n=name: lax.sort_key_val(d[f"k {n}"], d[f"v {n}"], -1, True),
        )
    check_calls(calls, data)


def test_lexsort(rng):
    """lax_numpy_test testLexsort: jnp.lexsort(keys, axis) (the last key most significant) is
    lax_sort of the keys in reverse with positions as the last operand; shapes of JAX's test,
    each with the next dtype (JAX's 1-d case has 0-d keys, which jnp.lexsort answers with 0
    without sorting)."""
    cases = [(s, a) for s in NONEMPTY_SHAPES if len(s) > 1 for a in (-1, *range(len(s) - 1))]
    data: Data = {}
    calls: Calls = {}
    for i, (shape, axis) in enumerate(cases):
        dtype = SORT_DTYPES[(3 * i) % len(SORT_DTYPES)]
        name = f"lexsort({shape}, axis={axis}, {dtype.name})"
        data[name] = jnp.asarray(_keys(rng, dtype, shape))

        def got(d, name=name, axis=axis):
            keys = list(d[name])[::-1]
            positions = jax.eval_shape(lambda k: jnp.lexsort(k, axis=axis), d[name]).dtype
            iota = lax.broadcasted_iota(positions, keys[0].shape, axis % keys[0].ndim)
            return jmp.lax_sort((*keys, iota), dimension=axis, num_keys=len(keys))[-1]

        calls[name] = (got, lambda d, name=name, axis=axis: jnp.lexsort(d[name], axis=axis))
    check_calls(calls, data)


# ----------------------------------------------------------------------------- transforms


def _unique_floats(rng: np.random.Generator, dtype: Any, shape) -> jax.Array:
    """Distinct floats (JAX's grad tests use distinct keys: a tie has no unique derivative)."""
    n = math.prod(shape)
    return jnp.asarray((rng.permutation(n).reshape(shape) - n / 2).astype(_held(dtype)))


def _tangents(rng: np.random.Generator, dtype: Any, shape) -> jax.Array:
    """Tangents / cotangents: plain numbers (no -0.0 or NaN, whose bits a scatter-add of the
    transpose may legitimately rewrite)."""
    return jnp.asarray(rng.standard_normal(shape).astype(_held(dtype)))


def test_sort_grad(rng):
    """lax_autodiff_test testSortGrad / testSortKeyValGrad: jvp and vjp of lax.sort and jnp.sort
    (both directions) along the last axis, and of sort_key_val in keys and values, stable or
    not, float32 and float64 keys (the derivative of the permutation)."""
    data: Data = {}
    calls: Calls = {}
    for dtype, shape in itertools.product(
        [np.float32, np.float64], [(0,), (5,), (5, 7), (4, 9, 3)]
    ):
        name = f"{_held(dtype).name}{shape}"
        data[name] = _unique_floats(rng, dtype, shape)
        data[f"t{name}"] = _tangents(rng, dtype, shape)
        axis = len(shape) - 1
        pairs = [
            (
                f"lax_sort(is_stable={s})",
                lambda x, s=s, a=axis: jmp.lax_sort(x, a, s),
                lambda x, a=axis: lax.sort(x, a, True),
            )
            for s in (False, True)
        ] + [
            (
                f"sort(descending={desc})",
                lambda x, desc=desc: jmp.sort(x, descending=desc),
                lambda x, desc=desc: jnp.sort(x, descending=desc),
            )
            for desc in (False, True)
        ]
        for what, got_f, want_f in pairs:
            for mode in ("jvp", "vjp"):
                calls[f"{mode} {what} {name}"] = (
                    lambda d, f=got_f, mode=mode, n=name: _derivative(f, mode, d[n], d[f"t{n}"]),
                    lambda d, g=want_f, mode=mode, n=name: _derivative(g, mode, d[n], d[f"t{n}"]),
                )
    for shape in [(3,), (5, 3), (4, 9, 3)]:
        data[f"keys{shape}"] = _unique_floats(rng, np.float32, shape)
        data[f"values{shape}"] = jnp.asarray(_keys(rng, np.float32, shape))
        data[f"tkeys{shape}"] = _tangents(rng, np.float32, shape)
        data[f"tvalues{shape}"] = _tangents(rng, np.float32, shape)
        for is_stable, mode in itertools.product([False, True], ["jvp", "vjp"]):

            def pair_of(fn, is_stable=is_stable, mode=mode, shape=shape):
                def run(d):
                    args = (d[f"keys{shape}"], d[f"values{shape}"])
                    tangents = (d[f"tkeys{shape}"], d[f"tvalues{shape}"])
                    f = lambda k, v: fn(k, v, len(shape) - 1, is_stable)  # noqa: E731
                    return _derivative(f, mode, args, tangents, several=True)

                return run

            calls[f"{mode} sort_key_val{shape}(is_stable={is_stable})"] = (
                pair_of(jmp.sort_key_val),
                pair_of(lambda k, v, dim, s: lax.sort_key_val(k, v, dim, True)),
            )
    check_calls(calls, data)


def _derivative(f: Callable, mode: str, x: Any, t: Any, several: bool = False) -> Any:
    """(primal out, jvp tangent out) or (primal out, vjp cotangent of the inputs) of f at x,
    with t as the tangent / cotangent (several: x and t are tuples of arguments)."""
    args, tangents = (x, t) if several else ((x,), (t,))
    if mode == "jvp":
        return jax.jvp(f, args, tangents)
    out, pullback = jax.vjp(f, *args)
    return out, pullback(tangents if several else t)


def test_lax_sort_vmap(rng):
    """lax_vmap_test testSort: jax.vmap of lax.sort with 1 or 2 operands of shape (2, 3) and a
    batch of 5 at every position (None: that operand is not batched), both dimensions, stable
    or not; and jax.vmap of jnp.sort / argsort along every input axis and of searchsorted over
    a batch of sorted rows (jnp.searchsorted takes a 1-d a: vmap gives it the batch)."""
    data: Data = {}
    calls: Calls = {}
    shape = (2, 3)
    bdims_cases = [(0,), (1,), (2,), (0, 0), (0, None), (None, 1), (2, 0), (1, 2)]
    for bdims in bdims_cases:
        names = []
        for i, bdim in enumerate(bdims):
            s = shape if bdim is None else (*shape[:bdim], 5, *shape[bdim:])
            names.append(f"op{i}{bdims}")
            data[names[-1]] = jnp.asarray(_keys(rng, np.float32, s))
        for dimension, is_stable in itertools.product([0, 1], [False, True]):

            def got(*ops, dim=dimension, s=is_stable):
                return jmp.lax_sort(ops if len(ops) > 1 else ops[0], dim, s)

            def want(*ops, dim=dimension):
                return lax.sort(ops if len(ops) > 1 else ops[0], dim, True)

            calls[f"vmap lax_sort(in_axes={bdims}, dimension={dimension}, {is_stable})"] = (
                lambda d, f=got, b=bdims, n=tuple(names): jax.vmap(f, b)(*(d[k] for k in n)),
                lambda d, g=want, b=bdims, n=tuple(names): jax.vmap(g, b)(*(d[k] for k in n)),
            )
    data["x"] = jnp.asarray(_keys(rng, np.float32, (3, 4, 5)))
    for in_axis, axis, descending, name in itertools.product(
        [0, 1, 2], [0, -1], [False, True], ["sort", "argsort"]
    ):

        def vmapped(d, mod, in_axis=in_axis, axis=axis, descending=descending, name=name):
            fn = getattr(mod, name)
            return jax.vmap(lambda x: fn(x, axis=axis, descending=descending), in_axis)(d["x"])

        calls[f"vmap {name}(in_axes={in_axis}, axis={axis}, descending={descending})"] = (
            lambda d, f=vmapped: f(d, jmp),
            lambda d, f=vmapped: f(d, jnp),
        )
    a = np.sort(_keys(rng, np.float32, (6, 20)), axis=-1)
    data["a"] = jnp.sort(jnp.asarray(a), axis=-1)
    data["v"] = jnp.asarray(_queries(rng, a, np.float32, (6, 7)))
    for side in ("left", "right"):
        calls[f"vmap searchsorted(side={side})"] = (
            lambda d, s=side: jax.vmap(lambda a, v: jmp.searchsorted(a, v, s))(d["a"], d["v"]),
            lambda d, s=side: jax.vmap(lambda a, v: jnp.searchsorted(a, v, s))(d["a"], d["v"]),
        )
    check_calls(calls, data)


# ----------------------------------------------------------------------------- types, errors


def test_weak_types(rng):
    """Outputs keep jnp's / lax's weak types: sorted keys and moved values stay weak, positions
    are never weak; eager and under jit."""
    mask = rng.random(9) < 0.5
    data = {
        "weak_f": jnp.where(mask, 1.5, -2.0),
        "weak_i": jnp.where(mask, 3, -1),
        "strong": jnp.arange(9.0),
    }
    assert data["weak_f"].weak_type and data["weak_i"].weak_type
    calls: Calls = {}
    for w in ("weak_f", "weak_i"):
        pairs = {
            "sort": (lambda x, s: jmp.sort(x), lambda x, s: jnp.sort(x)),
            "sort descending": (
                lambda x, s: jmp.sort(x, descending=True),
                lambda x, s: jnp.sort(x, descending=True),
            ),
            "argsort": (lambda x, s: jmp.argsort(x), lambda x, s: jnp.argsort(x)),
            "lax_sort": (lambda x, s: jmp.lax_sort(x), lambda x, s: lax.sort(x)),
            "lax_sort (weak, strong)": (
                lambda x, s: jmp.lax_sort((x, s)),
                lambda x, s: lax.sort((x, s)),
            ),
            "sort_key_val(weak, weak)": (
                lambda x, s: jmp.sort_key_val(x, x),
                lambda x, s: lax.sort_key_val(x, x),
            ),
            "sort_key_val(strong, weak)": (
                lambda x, s: jmp.sort_key_val(s, x),
                lambda x, s: lax.sort_key_val(s, x),
            ),
            "searchsorted": (
                lambda x, s: jmp.searchsorted(jnp.sort(x), x),
                lambda x, s: jnp.searchsorted(jnp.sort(x), x),
            ),
        }
        for name, (f, g) in pairs.items():
            calls[f"{name} of {w}"] = (
                lambda d, f=f, w=w: f(d[w], d["strong"]),
                lambda d, g=g, w=w: g(d[w], d["strong"]),
            )
    check_calls(calls, data)
    for w in ("weak_f", "weak_i"):
        assert_same(jmp.sort(data[w]), jnp.sort(data[w]), f"eager sort of {w}")


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # float64 -> float32, x64 off
@pytest.mark.parametrize(
    "dtype", [np.dtype(t) for t in (np.int64, np.float64, np.complex128)], ids=_id
)
def test_host_64_bit_inputs(rng, dtype):
    """numpy inputs of 64-bit dtypes go through as jnp takes them: kept with x64 on, made
    32-bit with x64 off (eager calls: under jit, jit itself would convert them)."""
    with jax.enable_x64(True):
        host = _keys(rng, dtype, (4, 6))
    # a stays sorted when made 32-bit (wrapped int64s would not be: a precondition violation).
    a = np.sort(rng.integers(-1000, 1000, 8)).astype(dtype)
    assert host.dtype == dtype and a.dtype == dtype
    assert_same(jmp.sort(host, axis=0), jnp.sort(host, axis=0), "sort")
    assert_same(jmp.argsort(host), jnp.argsort(host), "argsort")
    assert_same(jmp.searchsorted(a, host[1]), jnp.searchsorted(a, host[1]), "searchsorted")


def _raised(f: Callable[[], Any]) -> type[BaseException] | None:
    try:
        f()
    except Exception as e:  # the exception's type is the point
        return type(e)
    return None


_X = np.arange(6.0).reshape(2, 3)
ERROR_CASES: dict[str, tuple[Callable, Callable]] = {
    "sort kind": (lambda: jmp.sort(_X, kind="stable"), lambda: jnp.sort(_X, kind="stable")),
    "sort order": (lambda: jmp.sort(_X, order="x"), lambda: jnp.sort(_X, order="x")),
    "argsort kind": (
        lambda: jmp.argsort(_X, kind="quicksort"),
        lambda: jnp.argsort(_X, kind="quicksort"),
    ),
    "argsort order": (lambda: jmp.argsort(_X, order="x"), lambda: jnp.argsort(_X, order="x")),
    "sort axis": (lambda: jmp.sort(_X, axis=2), lambda: jnp.sort(_X, axis=2)),
    "argsort axis": (lambda: jmp.argsort(_X, -3), lambda: jnp.argsort(_X, -3)),
    "sort 0-d": (lambda: jmp.sort(np.float32(3)), lambda: jnp.sort(np.float32(3))),
    "searchsorted method": (
        lambda: jmp.searchsorted(_X[0], 1.0, method="bogus"),
        lambda: jnp.searchsorted(_X[0], 1.0, method="bogus"),
    ),
    "searchsorted side": (
        lambda: jmp.searchsorted(_X[0], 1.0, side="middle"),
        lambda: jnp.searchsorted(_X[0], 1.0, side="middle"),
    ),
    "sort_key_val shapes": (
        lambda: jmp.sort_key_val(_X, _X[0]),
        lambda: lax.sort_key_val(_X, _X[0]),
    ),
    "sort list": (lambda: jmp.sort([3.0, 1.0]), lambda: jnp.sort([3.0, 1.0])),
    "argsort tuple": (lambda: jmp.argsort((3.0, 1.0)), lambda: jnp.argsort((3.0, 1.0))),
    "searchsorted list a": (
        lambda: jmp.searchsorted([1.0, 2.0], 1.0),
        lambda: jnp.searchsorted([1.0, 2.0], 1.0),
    ),
    "searchsorted list v": (
        lambda: jmp.searchsorted(_X[0], [1.0]),
        lambda: jnp.searchsorted(_X[0], [1.0]),
    ),
    "searchsorted list sorter": (
        lambda: jmp.searchsorted(_X[0], 1.0, sorter=[0, 1, 2]),
        lambda: jnp.searchsorted(_X[0], 1.0, sorter=[0, 1, 2]),
    ),
    "sort traced descending": (
        lambda: jax.jit(lambda x, d: jmp.sort(x, descending=d))(_X, True),
        lambda: jax.jit(lambda x, d: jnp.sort(x, descending=d))(_X, True),
    ),
    "argsort descending array": (
        lambda: jmp.argsort(_X, descending=np.array(True)),
        lambda: jnp.argsort(_X, descending=np.array(True)),
    ),
    "argsort dtype not a dtype": (
        lambda: jmp.argsort(_X, dtype="bogus"),
        lambda: jnp.argsort(_X, dtype="bogus"),
    ),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_as_jnp(case):
    """Where jnp / lax raise for an argument, the package raises the same exception type."""
    got_f, want_f = ERROR_CASES[case]
    want = _raised(want_f)
    assert want is not None, f"{case}: jnp no longer raises"
    got = _raised(got_f)
    assert got is not None and issubclass(got, want), f"{case}: raised {got}, jnp raises {want}"


@pytest.mark.parametrize("descending", [1, "yes", np.bool_(True), 0, None])
def test_descending_any_value(rng, descending):
    """jnp.sort / jnp.argsort take any descending by its truth (a static argument)."""
    x = jnp.asarray(_keys(rng, np.float32, (3, 40)))
    for name in ("sort", "argsort"):
        assert_same(getattr(jmp, name)(x, descending=descending),
                    getattr(jnp, name)(x, descending=descending), f"{name}({descending!r})")


def test_argsort_dtype_int64_warns_as_jnp(x64):
    """lax_numpy_test testArgsortDtype's int64 with x64 off: int32 positions and jnp's warning
    (UserWarning, naming argsort), the same text."""
    x = jnp.asarray(np.array([3, 1, 2], np.int32))
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = jmp.argsort(x, dtype=np.int64)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        want = jnp.argsort(x, dtype=np.int64)
    assert_same(got, want, "argsort(dtype=int64)")
    assert [(w.category, str(w.message)) for w in ours] == [
        (w.category, str(w.message)) for w in theirs]
    assert bool(ours) == (not x64)


def test_searchsorted_dtype_as_jax_tests_it(x64):
    """lax_numpy_test testSearchsortedDtype, routed: int32 for an axis of 2**31 - 1, int64 for
    2**31 with x64 on; with it off jnp's warning and OverflowError, matched by JAX's regexes."""
    a_int32 = jax.ShapeDtypeStruct((np.iinfo(np.int32).max,), np.float32)
    a_int64 = jax.ShapeDtypeStruct((np.iinfo(np.int32).max + 1,), np.float32)
    v = jax.ShapeDtypeStruct((), np.float32)
    assert jax.eval_shape(jmp.searchsorted, a_int32, v).dtype == np.int32
    if x64:
        assert jax.eval_shape(jmp.searchsorted, a_int64, v).dtype == np.int64
        return
    with pytest.warns(UserWarning, match="Explicitly requested dtype.*int64"), pytest.raises(
        OverflowError, match="Python integer 2147483648 out of bounds.*"
    ):
        jax.eval_shape(jmp.searchsorted, a_int64, v)


def test_zero_d_axis_none():
    """axis=None flattens, so a 0-d input sorts as one element, as in jnp."""
    x = jnp.asarray(np.float32(-0.0))
    assert_same(jmp.sort(x, axis=None), jnp.sort(x, axis=None), "sort")
    assert_same(jmp.argsort(x, axis=None), jnp.argsort(x, axis=None), "argsort")


# ----------------------------------------------------------------------------- 2**31 elements

BIG = 2**31
_F32 = np.float32


def _sds(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, _F32)


def _trace(f: Callable, *args: Any) -> tuple[Any, set]:
    """What jax.eval_shape gives (shapes, dtypes, weak types) or the exception type it raises,
    and the warning categories raised on the way. Nothing is materialised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = jax.eval_shape(f, *args)
            result: Any = jax.tree.map(lambda s: (s.shape, s.dtype, s.weak_type), out)
        except Exception as e:  # the exception's type is the outcome compared
            result = type(e)
    return result, {w.category for w in caught}


# (jmp's functions are looked up when a case runs, so a missing one fails only its cases.)
BIG_CASES: dict[str, tuple[Callable, Callable, tuple]] = {
    "sort": (lambda a: jmp.sort(a), jnp.sort, (_sds(BIG),)),
    "sort axis=None": (
        lambda a: jmp.sort(a, axis=None),
        partial(jnp.sort, axis=None),
        (_sds(2, BIG // 2),),
    ),
    "argsort": (lambda a: jmp.argsort(a), jnp.argsort, (_sds(BIG),)),
    "argsort rows": (lambda a: jmp.argsort(a), jnp.argsort, (_sds(2, BIG),)),
    "argsort axis=0": (
        lambda a: jmp.argsort(a, axis=0),
        partial(jnp.argsort, axis=0),
        (_sds(BIG, 2),),
    ),
    "argsort axis=None": (
        lambda a: jmp.argsort(a, axis=None),
        partial(jnp.argsort, axis=None),
        (_sds(2, BIG // 2),),
    ),
    "argsort 2**31-1": (lambda a: jmp.argsort(a), jnp.argsort, (_sds(BIG - 1),)),
    "searchsorted": (lambda a, v: jmp.searchsorted(a, v), jnp.searchsorted, (_sds(BIG), _sds(3))),
    "searchsorted 2**31-1": (
        lambda a, v: jmp.searchsorted(a, v),
        jnp.searchsorted,
        (_sds(BIG - 1), _sds()),
    ),
    "sort_key_val": (lambda k, v: jmp.sort_key_val(k, v), lax.sort_key_val, (_sds(BIG), _sds(BIG))),
    "lax_sort num_keys=2": (
        lambda ops: jmp.lax_sort(ops, num_keys=2),
        partial(lax.sort, num_keys=2),
        ((_sds(BIG), _sds(BIG)),),
    ),
}


@pytest.mark.parametrize("case", list(BIG_CASES))
def test_axis_of_2_31_elements(x64, case):
    """An axis of 2**31 elements (the routing's failing case; lax_numpy_test
    testSearchsortedDtype): with x64 on it works and positions are int64; with x64 off the call
    does at trace time what jnp's does (searchsorted raises OverflowError; argsort warns that
    int64 is not available and gives int32, as jnp does), warnings included."""
    got_f, want_f, args = BIG_CASES[case]
    want, want_warnings = _trace(want_f, *args)
    got, got_warnings = _trace(got_f, *args)
    if isinstance(want, type):
        assert isinstance(got, type) and issubclass(got, want), f"raised {got}, jnp raises {want}"
    else:
        assert got == want, f"got {got}, jnp gives {want}"
    assert want_warnings <= got_warnings, f"warned {got_warnings}, jnp warns {want_warnings}"
    if x64 and case in ("argsort", "searchsorted"):
        assert got[1] == np.dtype(np.int64)
