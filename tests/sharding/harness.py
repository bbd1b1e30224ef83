"""Shared by the scripts in this folder (each runs in a fresh process with host CPU devices):
the case runner (`case` prints ``ok <case>`` or ``BAD <case>: why``; `configure` takes the
scripts' --quick / -k options; `finish` prints the tally and gives the exit status), bit-exact
comparison, sharding checks, the keys the cases sort (every edge value, skewed patterns), and the
collectives of a compiled program.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import re
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import jax
import ml_dtypes
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))  # tests/: the shared reference
from reference import assert_bits_equal  # noqa: E402

G = 8  # devices, unless a script says otherwise
BF16 = np.dtype(ml_dtypes.bfloat16)
# Quiet NaNs of both signs and several payloads (bfloat16: the default payload only, as in
# tests/reference.py: XLA:CPU moves bfloat16 through float32 and canonicalizes payloads there).
NAN_BITS = {
    "float16": [0x7E00, 0xFE00, 0x7E01, 0xFE37],
    "bfloat16": [0x7FC0, 0xFFC0],
    "float32": [0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFFC12345],
    "float64": [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001, 0xFFF800000000ABCD],
}
COLLECTIVE = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.+?)\s+(all-gather|all-reduce|reduce-scatter)"
    r"(?:-start)?\(", re.M)
ANY_COLLECTIVE = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.+?)\s+(all-gather|all-reduce|reduce-scatter|all-to-all|"
    r"collective-permute)(?:-start)?\(", re.M)
EXCHANGE = re.compile(r"\b(?:ragged-)?all-to-all(?:-start)?\(|\bcollective-permute(?:-start)?\(")
SHAPE = re.compile(r"\b[a-z]+[0-9]*\[([0-9,]*)\]")


failures: list[str] = []
passed = 0
selected: str | None = None
quick_only = False


def start(*flags: str) -> argparse.Namespace:
    """A script's options (--quick, --x64, -k, and `flags`: boolean options), applied: the cases
    selected, x64 set, the G devices checked; prints the header line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--x64", action="store_true", help="jax_enable_x64 on; 64-bit dtypes")
    parser.add_argument("--quick", action="store_true", help="the core cases only")
    parser.add_argument("-k", default=None, help="run only the cases whose name has this")
    for flag in flags:
        parser.add_argument(flag, action="store_true")
    args = parser.parse_args()
    configure(args.quick, args.k)
    jax.config.update("jax_enable_x64", args.x64)
    assert len(jax.devices()) == G, jax.devices()
    extra = "".join(f", {f.lstrip('-')}={getattr(args, f.lstrip('-'))}" for f in flags)
    print(f"jax {jax.__version__}, x64={args.x64}, quick={args.quick}{extra}", flush=True)
    return args


def configure(quick: bool, only: str | None) -> None:
    """Run only the quick cases (quick) or those whose name has `only`."""
    global selected, quick_only
    selected, quick_only = only, quick


def finish() -> int:
    """Prints the tally; the exit status (1 on any failure)."""
    print(f"{passed} ok, {len(failures)} failed" + (f": {failures}" if failures else ""))
    return 1 if failures else 0


def case(name: str, fn: Callable[[], str | None], quick: bool = False) -> None:
    """Runs one case: prints `ok name` or `BAD name: why` (an exception is a failure); with
    --quick only the quick ones."""
    global passed
    if (selected and selected not in name) or (quick_only and not quick):
        return
    t0 = time.perf_counter()
    try:
        note = fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported, the script goes on
        failures.append(name)
        lines = traceback.format_exception_only(type(e), e)
        msg = "".join(lines).strip().replace("\n", " | ")
        print(f"BAD {name}: {msg[:1500]}", flush=True)
        if not isinstance(e, AssertionError):
            traceback.print_exc(limit=-4, file=sys.stdout)
        return
    passed += 1
    dt = time.perf_counter() - t0
    print(f"ok {name}" + (f": {note}" if note else "") + f" ({dt:.1f} s)", flush=True)


def assert_same(got: Any, want: Any, what: str = "") -> None:
    """Same pytree, dtypes, shapes and bits (-0.0 != +0.0, NaN payloads matter)."""
    gl, gt = jax.tree.flatten(got)
    wl, wt = jax.tree.flatten(want)
    assert gt == wt, f"{what}: structure {gt} != {wt}"
    for i, (g, w) in enumerate(zip(gl, wl, strict=True)):
        assert_bits_equal(g, w, f"{what} [output {i}]")


def assert_sharding(outs: Any, sharding: NamedSharding, what: str = "") -> None:
    for i, o in enumerate(jax.tree.leaves(outs)):
        assert isinstance(o, jax.Array), f"{what} [output {i}]: {type(o)}"
        want = NamedSharding(sharding.mesh, P(*sharding.spec, *([None] * (o.ndim - len(
            sharding.spec)))))
        assert o.sharding.is_equivalent_to(want, o.ndim), (
            f"{what} [output {i}]: sharding {o.sharding} is not the input's {sharding}")
        shapes = {s.data.shape for s in o.addressable_shards}
        assert len(shapes) == 1, f"{what} [output {i}]: uneven shards {shapes}"


# ---------------------------------------------------------------- data


def specials(dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.min + 1, 0, 1, info.max - 1, info.max], dtype)
    info = ml_dtypes.finfo(dtype)
    vals = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, float(info.max), -float(info.max),
                     float(info.smallest_normal)]).astype(dtype)
    nans = np.array(NAN_BITS[dtype.name], f"u{dtype.itemsize}").view(dtype)
    return np.concatenate([vals, nans])


def keys(rng: np.random.Generator, dtype: Any, shape: Any, pattern: str = "mixed") -> np.ndarray:
    """Keys of dtype and shape (the sorted axis last; floats without subnormals, which XLA:CPU's
    jnp.sort flushes to zero). pattern: mixed (random, many ties, ~10% edge values: NaNs of
    several payloads and both signs, +-0.0, +-inf, int min / max), ties3 (3 distinct keys;
    floats -0.0, +0.0, 1.0), equal (floats: +0.0 and -0.0 mixed), two, sorted, reverse,
    half_sorted (the first half of the axis sorted, the rest random), rotated<k> (sorted, rolled
    by k shards), nan (floats: NaNs only)."""
    dtype = np.dtype(dtype)
    shape = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
    n = shape[-1]
    isfloat = dtype.kind == "f" or dtype == BF16
    if pattern == "mixed":
        if dtype == np.bool_:
            out = rng.integers(0, 2, shape).astype(bool)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            wide = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
            narrow = rng.integers(max(int(info.min), -20), 20, shape).astype(dtype)
            out = np.where(rng.random(shape) < 0.5, wide, narrow)
        else:
            out = (np.round(rng.standard_normal(shape) * 20) / 4).astype(dtype)
        edge = rng.random(shape) < 0.1
        return np.where(edge, rng.choice(specials(dtype), shape), out).astype(dtype)
    if pattern == "ties3":
        pool = np.array([-0.0, 0.0, 1.0]) if isfloat else np.arange(3)
        return rng.choice(pool, shape).astype(dtype)
    if pattern == "equal":
        if isfloat:
            return np.where(rng.random(shape) < 0.5, 0.0, -0.0).astype(dtype)
        return np.full(shape, 1, dtype)
    if pattern == "two":
        return rng.integers(0, 2, shape).astype(dtype)
    if pattern == "nan":
        nans = np.array(NAN_BITS[dtype.name], f"u{dtype.itemsize}").view(dtype)
        return rng.choice(nans, shape)
    base = np.sort(keys(rng, dtype, shape, "mixed"), axis=-1, kind="stable")
    if pattern == "sorted":
        return base
    if pattern == "reverse":
        return base[..., ::-1].copy()
    if pattern == "half_sorted":
        out = keys(rng, dtype, shape, "mixed")
        out[..., : n // 2] = np.sort(out[..., : n // 2], axis=-1, kind="stable")
        return out
    if pattern.startswith("rotated"):
        return np.roll(base, int(pattern[len("rotated"):]) * (n // G), axis=-1)
    raise ValueError(pattern)


def local0(x: np.ndarray) -> jax.Array:
    """x on one device (the unsharded reference's input)."""
    return jax.device_put(x, jax.devices()[0])


# ---------------------------------------------------------------- compiled program


def collective_sizes(text: str, pattern: re.Pattern = COLLECTIVE) -> list[tuple[str, int]]:
    """(op, largest element count of one output array) of every all-gather, all-reduce and
    reduce-scatter (pattern ANY_COLLECTIVE: every collective) in an HLO module's text."""
    out = []
    for m in pattern.finditer(text):
        shapes = SHAPE.findall(m.group(1))
        sizes = [math.prod(int(d) for d in s.split(",") if d) for s in shapes]
        out.append((m.group(2), max(sizes, default=0)))
    return out


def put(mesh: Any, spec: P, *arrays: Any) -> list:
    """Every array (pytree) placed split by spec along its first axis."""
    return [jax.tree.map(lambda a: jax.device_put(a, NamedSharding(mesh, spec)), a)
            for a in arrays]


def distinct(rng: np.random.Generator, n: int) -> np.ndarray:
    """Distinct floats (no ties: the gradient of sort is then unique)."""
    return ((rng.permutation(n) - n / 2) * 0.5 + 0.25).astype(np.float32)


