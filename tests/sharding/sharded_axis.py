"""Run in a fresh process with 8 CPU devices (see test_sharded_axis.py): sorts along an axis
SHARDED over a mesh axis (docs/contract.md "Sharding") give the unsharded jnp result bit for bit,
keep the input's sharding, and compile to a program without an all-gather of the data.

Paths: inside a user's shard_map (``axis_name=``), unchanged user code under ``jax.jit`` with
arrays placed by ``NamedSharding`` on an Explicit mesh, and eager calls on such arrays. Cases:
every key dtype (``--x64``: also the 64-bit ones), both directions, stability, argsort's global
positions, sort_by_key with a pytree payload, lax_sort with two keys, skewed and presorted
shards, shard sizes 1 to 2**14 + 8, 2-D arrays (rows replicated or sharded on a 2-D mesh), vmap
and grad, the compiled program's collectives, and sorts and merges inside check_sorted_inputs()
(a sort carries no check; a merge checks the user's shards). Prints ``ok <case>`` or
``BAD <case>: why`` per case and exits non-zero on any failure.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \\
        python tests/sharding/sharded_axis.py [--x64] [-k SUBSTRING]
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from harness import (
    EXCHANGE,
    G,
    assert_same,
    assert_sharding,
    case,
    collective_sizes,
    configure,
    distinct,
    finish,
    keys,
    local0,
    put,
)
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp

DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "bool", "float16", "bfloat16",
          "float32"]
DTYPES_X64 = ["int64", "uint64", "float64"]
QUICK_DTYPES = ["int8", "bfloat16", "float32"]


# ---------------------------------------------------------------- the four sorts, both ways


def ref_family(x: np.ndarray, axis: int = -1) -> tuple:
    x = local0(x)
    return (jnp.sort(x, axis=axis), jnp.sort(x, axis=axis, descending=True),
            jnp.argsort(x, axis=axis, stable=True),
            jnp.argsort(x, axis=axis, stable=True, descending=True))


def jmp_family(axis: int = -1, axis_name: Any = None) -> Callable:
    kw: dict[str, Any] = {} if axis_name is None else {"axis_name": axis_name}

    def f(x):
        return (jmp.sort(x, axis=axis, **kw), jmp.sort(x, axis=axis, descending=True, **kw),
                jmp.argsort(x, axis=axis, **kw),
                jmp.argsort(x, axis=axis, descending=True, **kw))
    return f


@functools.cache
def smap(fn: Callable, mesh: Any, spec: P) -> Callable:
    """jit(shard_map(fn)) with every input and output split by spec (cached: one trace)."""
    return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=spec, out_specs=spec))


@functools.cache
def smap_family(mesh: Any, spec: P, axis: int = -1, axis_name: Any = "d") -> Callable:
    return smap(jmp_family(axis, axis_name), mesh, spec)


JIT_SORT = jax.jit(jmp.sort, static_argnames=("axis", "descending"))
JIT_ARGSORT = jax.jit(jmp.argsort, static_argnames=("axis", "descending"))


@functools.cache
def jit_family(axis: int) -> Callable:
    return jax.jit(jmp_family(axis))


def check_smap_family(x: np.ndarray, mesh: Any, spec: P, axis: int = -1,
                      axis_name: Any = "d") -> str:
    want = ref_family(x, axis)
    got = smap_family(mesh, spec, axis, axis_name)(jax.device_put(x, NamedSharding(mesh, spec)))
    assert_same(got, want, "sort, sort desc, argsort, argsort desc")
    return f"{x.dtype} {x.shape}"


def check_jit_family(x: np.ndarray, mesh: Any, spec: P, axis: int = -1, eager: bool = False
                     ) -> str:
    sh = NamedSharding(mesh, spec)
    xs = jax.device_put(x, sh)
    want = ref_family(x, axis)
    got = jmp_family(axis)(xs) if eager else jit_family(axis)(xs)
    assert_same(got, want, "sort, sort desc, argsort, argsort desc")
    assert_sharding(got, sh)
    return f"{x.dtype} {x.shape} {spec}"


# ---------------------------------------------------------------- sort_by_key and lax_sort


def ref_sort_by_key(k: np.ndarray, v: Any, descending: bool) -> tuple:
    perm = np.asarray(jnp.argsort(local0(k), stable=True, descending=descending))
    take = functools.partial(np.take, indices=perm, axis=0)
    return take(k), jax.tree.map(lambda a: take(np.asarray(a)), v)


def payload(rng: np.random.Generator, n: int) -> dict:
    return {"a": rng.standard_normal(n).astype(np.float32),
            "b": rng.integers(-1000, 1000, (n, 3)).astype(np.int32)}


def lax_operands(rng: np.random.Generator, n: int) -> tuple:
    k1 = rng.integers(0, 4, n).astype(np.int16)
    k2 = keys(rng, np.float32, n, "ties3")
    k2[rng.random(n) < 0.05] = np.float32(np.nan)
    v = rng.standard_normal(n).astype(np.float32)
    v[rng.random(n) < 0.1] = -0.0
    return k1, k2, v


def ref_lax_sort(ops: tuple) -> tuple:
    return jax.lax.sort(tuple(local0(o) for o in ops), num_keys=2, is_stable=True)


# ---------------------------------------------------------------- compiled program


def check_hlo(fn: Callable, args: tuple, local_n: int) -> str:
    text = fn.lower(*args).compile().as_text()
    sizes = collective_sizes(text)
    big = [(op, s) for op, s in sizes if s >= local_n / 4]
    gathers = [s for op, s in sizes if op == "all-gather"]
    assert not big, (f"collectives as large as the data (local shard {local_n} elements): {big}; "
                     f"all: {sizes}")
    assert EXCHANGE.search(text), "no all-to-all / collective-permute (the exchange)"
    return f"largest all-gather {max(gathers, default=0)} elements, local shard {local_n}"


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--x64", action="store_true", help="jax_enable_x64 on; 64-bit dtypes")
    parser.add_argument("--quick", action="store_true",
                        help="the core cases only (with --x64: the 64-bit ones)")
    parser.add_argument("-k", default=None, help="run only the cases whose name has this")
    args = parser.parse_args()
    configure(args.quick, args.k)
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    devices = jax.devices()
    assert len(devices) == G, devices
    print(f"jax {jax.__version__}, x64={jax.config.jax_enable_x64}, quick={args.quick}, "
          f"partitioner: {'shardy' if jax.config.jax_use_shardy_partitioner else 'gspmd'}")
    mesh = jax.make_mesh((G,), ("d",))  # Explicit axis types (make_mesh's default)
    mesh2 = jax.make_mesh((2, G // 2), ("r", "d"))
    assert all(t == jax.sharding.AxisType.Explicit for t in mesh.axis_types), mesh
    rng = np.random.default_rng(20240610 + args.x64)
    d = P("d")
    n = 1000  # local shard
    core = not args.x64  # --quick runs these without --x64, the 64-bit cases with it

    # -- shard_map with axis_name: every dtype, both directions, sort and argsort
    for dt in DTYPES + (DTYPES_X64 if args.x64 else []):
        x = keys(rng, dt, G * n)
        case(f"shard_map dtype {dt}", lambda x=x: check_smap_family(x, mesh, d),
             quick=dt in QUICK_DTYPES if core else dt in DTYPES_X64)
    for dt in ["float32", "int8"]:
        x = keys(rng, dt, G * n, "ties3")
        case(f"shard_map stability ties3 {dt}", lambda x=x: check_smap_family(x, mesh, d),
             quick=core)
    for dt in ["float16", "bfloat16", "float32"] + (["float64"] if args.x64 else []):
        x = keys(rng, dt, G * n, "nan")
        case(f"shard_map all NaN {dt}", lambda x=x: check_smap_family(x, mesh, d),
             quick=dt == "float32" and core or dt == "float64")

    # -- skew: unequal sortedness, equal keys, two values, sorted, reverse, rotated shards
    for pattern in ["half_sorted", "equal", "two", "sorted", "reverse", "rotated1",
                    "rotated3", "rotated7"]:
        for dt in ["float32", "uint16"]:
            x = keys(rng, dt, G * n, pattern)
            case(f"shard_map skew {pattern} {dt}", lambda x=x: check_smap_family(x, mesh, d),
                 quick=core and dt == "float32")

    # -- shard sizes
    for local in [1, 7, 2**14 + 8]:
        for pattern in ["mixed", "ties3", "rotated3", "reverse"]:
            x = keys(rng, np.float32, G * local, pattern)
            case(f"shard_map size {local}/device {pattern}",
                 lambda x=x: check_smap_family(x, mesh, d), quick=core and local != 7)

    # -- 2-D: rows replicated, rows sharded on a 2-D mesh, the sorted axis first; a tuple axis
    x2 = keys(rng, np.float32, (4, G * n))
    case("shard_map 2-D P(None, 'd')", lambda: check_smap_family(x2, mesh, P(None, "d")))
    case("shard_map 2-D P('r', 'd') on a 2x4 mesh",
         lambda: check_smap_family(x2, mesh2, P("r", "d")), quick=core)
    # rows of large shards, some skewed (the rest of their pieces by ppermute rounds, a device
    # shift at a time: every row group must run as many as the other, or XLA's collective
    # permute waits forever)
    big = 2**14 + 8
    x2s = np.stack([keys(rng, np.float32, (G // 2) * big, p)
                    for p in ("reverse", "mixed", "rotated3", "mixed")])
    case("shard_map 2-D P('r', 'd') on a 2x4 mesh, rows skewed",
         lambda: check_smap_family(x2s, mesh2, P("r", "d")))
    xt = np.ascontiguousarray(keys(rng, np.int16, (3, G * n)).T)
    case("shard_map 2-D axis=0 P('d', None)",
         lambda: check_smap_family(xt, mesh, P("d", None), axis=0), quick=core)
    x1 = keys(rng, np.float32, G * n)
    case("shard_map axis_name=('r', 'd') on a 2x4 mesh",
         lambda: check_smap_family(x1, mesh2, P(("r", "d")), axis_name=("r", "d")))
    # the shards in ('d', 'r') order, the other order than the mesh's (jax's ppermute numbers
    # devices in the mesh's: Axes.permute), large and skewed (the ppermute rounds run)
    xdr = keys(rng, np.float32, G * big, "reverse")
    case("shard_map axis_name=('d', 'r') on a 2x4 mesh, skewed",
         lambda: check_smap_family(xdr, mesh2, P(("d", "r")), axis_name=("d", "r")),
         quick=core)

    # -- sort_by_key (pytree payload with trailing dims; one fused leaf) and lax_sort
    kb = keys(rng, np.float32, G * n, "ties3")
    vb = payload(rng, G * n)
    vi = rng.integers(0, 1 << 30, G * n).astype(np.int32)
    for desc in [False, True]:
        f_tree = smap(functools.partial(_sbk, descending=desc), mesh, d)
        case(f"shard_map sort_by_key pytree descending={desc}", lambda f=f_tree, desc=desc:
             assert_same(f(*put(mesh, d, kb, vb)), ref_sort_by_key(kb, vb, desc)),
             quick=core and desc)
        case(f"shard_map sort_by_key one leaf descending={desc}", lambda f=f_tree, desc=desc:
             assert_same(f(*put(mesh, d, kb, vi)), ref_sort_by_key(kb, vi, desc)))
    # shards of 2**14 + 8 keys: the received chunks merged as rows (_sharded.py
    # MERGED_ROWS_MIN_SHARD), with the pytree (trailing dims: gathered) and one fused leaf
    big = G * (2**14 + 8)
    kl, vl = keys(rng, np.float32, big), payload(rng, big)
    vil = rng.integers(0, 1 << 30, big).astype(np.int32)
    f_big = smap(functools.partial(_sbk, descending=False), mesh, d)
    case("shard_map sort_by_key pytree size 16392/device", lambda: assert_same(
        f_big(*put(mesh, d, kl, vl)), ref_sort_by_key(kl, vl, False)), quick=core)
    case("shard_map sort_by_key one leaf size 16392/device", lambda: assert_same(
        f_big(*put(mesh, d, kl, vil)), ref_sort_by_key(kl, vil, False)), quick=core)
    ops = lax_operands(rng, G * n)
    f_lax = smap(_lax3, mesh, d)
    case("shard_map lax_sort num_keys=2 + 1 operand",
         lambda: assert_same(f_lax(*put(mesh, d, *ops)), ref_lax_sort(ops)), quick=core)

    # -- unchanged user code: jit with NamedSharding'd arrays (Explicit mesh), and eager
    for dt in ["float32", "int8", "bool"] + (["float64", "uint64"] if args.x64 else []):
        x = keys(rng, dt, G * n)
        case(f"jit explicit {dt}", lambda x=x: check_jit_family(x, mesh, d),
             quick=dt == "float32" and core or dt == "float64")
    for local in [1, 7]:
        x = keys(rng, np.float32, G * local)
        case(f"jit explicit size {local}/device", lambda x=x: check_jit_family(x, mesh, d))
    x = keys(rng, np.float32, G * n, "rotated3")
    case("jit explicit skew rotated3", lambda: check_jit_family(x, mesh, d))
    case("jit explicit 2-D P(None, 'd')", lambda: check_jit_family(x2, mesh, P(None, "d")))
    case("jit explicit 2-D P('r', 'd') on a 2x4 mesh",
         lambda: check_jit_family(x2, mesh2, P("r", "d")))
    case("jit explicit 2-D axis=0 P('d', None)",
         lambda: check_jit_family(xt, mesh, P("d", None), axis=0))
    case("jit explicit 1-D P(('r', 'd'))", lambda: check_jit_family(x1, mesh2, P(("r", "d"))))
    case("jit explicit 1-D P(('d', 'r')) skewed",
         lambda: check_jit_family(xdr, mesh2, P(("d", "r"))))
    x = keys(rng, np.float32, G * n)
    case("eager explicit sort", lambda: check_eager(jmp.sort, x, mesh, d), quick=core)
    case("eager explicit argsort descending", lambda: check_eager(functools.partial(
        jmp.argsort, descending=True), x, mesh, d))
    case("eager explicit 2-D P('r', 'd') sort descending", lambda: check_eager(functools.partial(
        jmp.sort, descending=True), x2, mesh2, P("r", "d")))
    for desc in [False, True]:
        for how, fn in [("jit", jax.jit(functools.partial(_sbk_plain, descending=desc))),
                        ("eager", functools.partial(_sbk_plain, descending=desc))]:
            case(f"{how} explicit sort_by_key pytree descending={desc}",
                 lambda fn=fn, desc=desc: _check_explicit(
                     fn, (kb, vb), ref_sort_by_key(kb, vb, desc), mesh),
                 quick=core and how == "jit" and not desc)
    for how, fn in [("jit", jax.jit(_lax3_plain)), ("eager", _lax3_plain)]:
        case(f"{how} explicit lax_sort num_keys=2 + 1 operand",
             lambda fn=fn: _check_explicit(fn, ops, ref_lax_sort(ops), mesh))

    # -- the compiled program: no all-gather of the data, one exchange
    big = G * (2**14 + 8)
    xb = jax.device_put(keys(rng, np.float32, big), NamedSharding(mesh, d))
    vbig = jax.device_put(rng.standard_normal(big).astype(np.float32), NamedSharding(mesh, d))
    local_n = big // G
    sm = functools.partial(jax.shard_map, mesh=mesh, in_specs=d, out_specs=d)
    for name, fn, fargs, q in [
        ("shard_map sort", jax.jit(sm(lambda x: jmp.sort(x, axis_name="d"))), (xb,), core),
        ("shard_map argsort desc", jax.jit(sm(lambda x: jmp.argsort(
            x, descending=True, axis_name="d"))), (xb,), False),
        ("shard_map sort_by_key", jax.jit(sm(lambda k, v: jmp.sort_by_key(
            k, v, axis_name="d"))), (xb, vbig), False),
        ("jit explicit sort", JIT_SORT, (xb,), False),
        ("jit explicit argsort", JIT_ARGSORT, (xb,), False),
        ("jit explicit sort_by_key", jax.jit(jmp.sort_by_key), (xb, vbig), core),
        ("jit explicit lax_sort", jax.jit(lambda a, b: jmp.lax_sort((a, b), num_keys=2)),
         (xb, vbig), False),
    ]:
        case(f"hlo {name}: no all-gather of the data",
             lambda fn=fn, fargs=fargs: check_hlo(fn, fargs, local_n), quick=q)

    # -- transformations: vmap of a shard_map'ed sort, grad
    xv = keys(rng, np.float32, (3, G * n))
    f_vm = jax.jit(jax.vmap(jax.shard_map(jmp_family(-1, "d"), mesh=mesh, in_specs=d,
                                          out_specs=d)))
    case("vmap of shard_map sort family",
         lambda: assert_same(f_vm(jax.device_put(xv, NamedSharding(mesh, P(None, "d")))),
                             ref_family(xv)))
    xg = distinct(rng, G * n)
    w = rng.standard_normal(G * n).astype(np.float32)
    f_sm = jax.shard_map(lambda x: jmp.sort(x, axis_name="d"), mesh=mesh, in_specs=d,
                         out_specs=d)
    for name, loss, desc, q in [
        ("grad through shard_map sort", lambda x, w: jnp.sum(f_sm(x) * w), False, False),
        ("grad jit explicit sort", lambda x, w: jnp.sum(jmp.sort(x) * w), False, core),
        ("grad jit explicit sort descending",
         lambda x, w: jnp.sum(jmp.sort(x, descending=True) * w), True, False),
    ]:
        case(name, lambda loss=loss, desc=desc: check_grad(loss, xg, w, desc, mesh), quick=q)

    case("grad with integer outputs", lambda: check_grad_integer_outputs(rng, mesh, n))

    # -- jax.export of a sharded-axis sort (jit on explicit axes, and a user's shard_map),
    # serialized and called back
    case("export sharded sort and argsort", lambda: check_export(xg, mesh), quick=core)
    # -- merge and searchsorted along the split axis
    case("merge and searchsorted split axis", lambda: check_merge_search(rng, mesh, n))

    # -- uneven shards: a ValueError naming the axis (when jax lets such an array be placed)
    case("uneven global length", lambda: check_uneven(mesh), quick=core)

    # -- inside check_sorted_inputs(): a sort has no precondition, and a sharded sort's internal
    # merges carry no checks (on 2, 4, 8 devices: merge_runs of 2 runs, the merged rows); a
    # sharded merge checks the user's shards
    for g in (2, 4, 8):
        case(f"checked mode shard_map sort {g} devices",
             lambda g=g: check_checked_sort(rng, g), quick=core and g == 2)
    case("checked mode shard_map merge checks the shards", lambda: check_checked_merge(rng))
    # the all_to_all rounds, one batch dimension; the ring rounds (RING_MIN_SHARD), two
    for shard, rows in ((2**10, (3,)), (2**14, (2, 2))):
        case(f"checkify of shard_map with batch rows {rows}, shards of {shard}",
             lambda shard=shard, rows=rows: check_checkify_rows(rng, shard, rows),
             quick=core and shard == 2**10)
    case("checkify of a user's vmap of shard_map with batch rows",
         lambda: check_checkify_user_vmap(rng), quick=core)
    case("shard_map with zero batch rows", lambda: check_zero_rows(rng), quick=core)
    case("vmap of grad: explicit and auto axes, unsharded",
         lambda: check_vmap_grad(rng), quick=core)

    return finish()


def check_checked_sort(rng: np.random.Generator, g: int) -> str:
    """jit(shard_map(sort)) traced inside check_sorted_inputs() sorts (shards of 2**14 keys:
    large enough for the received runs to be merged), with no checkify check in its program."""
    mesh = jax.make_mesh((g,), ("c",), devices=jax.devices()[:g])
    x = keys(rng, np.float32, g * 2**14)
    f = jax.jit(jax.shard_map(lambda v: jmp.sort(v, axis_name="c"), mesh=mesh, in_specs=P("c"),
                              out_specs=P("c")))
    xs = jax.device_put(x, NamedSharding(mesh, P("c")))
    with jmp.check_sorted_inputs():
        got = f(xs)
        assert not re.search(r"\bcheck\[", str(jax.make_jaxpr(f)(xs))), "a check in the sort"
    assert_same(got, jnp.sort(local0(x)), "sort")
    return f"float32 {g} x 2**14"


def check_checked_merge(rng: np.random.Generator) -> str:
    """Inside check_sorted_inputs(), a merge inside shard_map (axis_name) checks its shards of a
    and b, under checkify: sorted shards pass, an unsorted one is named. (An Auto mesh axis:
    jax's checkify of a shard_map over Explicit axes fails by itself, jax 0.10.2.)"""
    from jax.experimental import checkify

    mesh = jax.make_mesh((G,), ("c",), axis_types=(jax.sharding.AxisType.Auto,))
    a = np.sort(keys(rng, np.float32, G * 2**10, "ties3"))
    b = np.sort(keys(rng, np.float32, G * 2**10, "ties3"))
    f = checkify.checkify(jax.jit(jax.shard_map(
        lambda a, b: jmp.merge(a, b, axis_name="c"), mesh=mesh, in_specs=(P("c"), P("c")),
        out_specs=P("c"))))
    bad = a.copy()
    bad[3 * 2**10 + 5] = np.inf  # device 3's shard of a is out of order
    with jmp.check_sorted_inputs():
        err, got = f(*put(mesh, P("c"), a, b))
        bad_err, _ = f(*put(mesh, P("c"), bad, b))
    assert err.get() is None, err.get()
    c = np.concatenate([a, b])
    assert_same(got, c[np.argsort(c, kind="stable")], "merge")
    assert bad_err.get() is not None and "merge: a is not sorted" in bad_err.get(), bad_err.get()
    return "sorted and unsorted shards"


def check_checkify_rows(rng: np.random.Generator, shard: int, rows: tuple[int, ...]) -> str:
    """checkify of a shard_map'd sort and merge of arrays with batch rows (rows of skewed and
    random keys, so their exchanges need different rounds): the loops' trip counts are one for
    all rows (checkify refuses a batched while loop); results equal jnp's, and in the checked
    mode an unsorted row is named."""
    from jax.experimental import checkify

    mesh = jax.make_mesh((G,), ("c",), axis_types=(jax.sharding.AxisType.Auto,))
    spec = P(*[None] * len(rows), "c")
    patterns = ["mixed", "sorted", "two", "rotated3"]
    x = np.stack([keys(rng, np.float32, G * shard, patterns[r % 4])
                  for r in range(math.prod(rows))]).reshape(*rows, G * shard)
    a = np.sort(keys(rng, np.float32, (*rows, G * shard), "ties3"), axis=-1)
    b = np.sort(keys(rng, np.float32, (*rows, G * shard)), axis=-1)
    b[..., 0, :shard] = np.inf  # the first device's pieces of b all go to the last: skewed
    b.sort(axis=-1)
    sort = checkify.checkify(jax.jit(jax.shard_map(
        lambda v: jmp.sort(v, axis=-1, axis_name="c"), mesh=mesh, in_specs=spec,
        out_specs=spec)))
    merge = checkify.checkify(jax.jit(jax.shard_map(
        lambda a, b: jmp.merge(a, b, axis_name="c"), mesh=mesh, in_specs=(spec, spec),
        out_specs=spec)))
    err, got = sort(*put(mesh, spec, x))
    assert err.get() is None, err.get()
    assert_same(got, jnp.sort(local0(x), axis=-1), "sort")
    bad = b.copy()
    bad[..., -1, 3 * shard + 5] = -np.inf  # the last rows of b out of order on device 3
    with jmp.check_sorted_inputs():
        err, got = merge(*put(mesh, spec, a, b))
        bad_err, _ = merge(*put(mesh, spec, a, bad))
    assert err.get() is None, err.get()
    c = np.concatenate([a, b], axis=-1)
    assert_same(got, np.take_along_axis(c, np.argsort(c, axis=-1, kind="stable"), -1), "merge")
    assert bad_err.get() is not None and "merge: b is not sorted" in bad_err.get(), bad_err.get()
    return f"rows {rows}, shards of {shard}"


def check_checkify_user_vmap(rng: np.random.Generator) -> str:
    """checkify of a user's vmap over a shard_map'd sort of batch rows, and of a user's vmap
    inside the shard_map: the rows' trip counts are reduced over every vmapped axis."""
    from jax.experimental import checkify

    mesh = jax.make_mesh((G,), ("c",), axis_types=(jax.sharding.AxisType.Auto,))
    x = np.stack([keys(rng, np.float32, G * 256, p)
                  for p in ("mixed", "sorted", "reverse", "two")]).reshape(2, 2, G * 256)
    sort = functools.partial(jmp.sort, axis=-1, axis_name="c")
    rows = P(None, "c")
    outer = checkify.checkify(jax.jit(jax.vmap(jax.shard_map(
        sort, mesh=mesh, in_specs=rows, out_specs=rows))))
    inner = checkify.checkify(jax.jit(jax.shard_map(
        jax.vmap(sort), mesh=mesh, in_specs=P(None, None, "c"), out_specs=P(None, None, "c"))))
    for f in (outer, inner):
        err, got = f(x)
        assert err.get() is None, err.get()
        assert_same(got, jnp.sort(local0(x), axis=-1), "sort")
    return "vmap outside and inside the shard_map, rows (2, 2)"


def check_vmap_grad(rng: np.random.Generator) -> str:
    """jax.vmap of jax.grad through a sort and a merge (per-example gradients; their derivatives'
    linear_call batched): on explicit and auto axes under jit, and on unsharded arrays under jit
    on this host of several devices (the auto-axis way), equal to jnp's."""
    x = rng.standard_normal((3, G * 16)).astype(np.float32)
    w = rng.standard_normal(G * 16).astype(np.float32)

    def loss(sort, merge):
        def f(v):
            return jnp.sum(sort(v) * w) + jnp.sum(merge(sort(v), sort(-v))[::2] * w)
        return f

    want = jax.vmap(jax.grad(loss(jnp.sort, lambda a, b: jnp.sort(jnp.concatenate([a, b])))))(
        local0(x))
    auto = jax.make_mesh((G,), ("c",), axis_types=(jax.sharding.AxisType.Auto,))
    got = {
        "explicit": jax.jit(jax.vmap(jax.grad(loss(jmp.sort, jmp.merge))))(
            *put(jax.make_mesh((G,), ("d",)), P(None, "d"), x)),
        "auto": jax.jit(jax.vmap(jax.grad(loss(jmp.sort, jmp.merge))))(
            *put(auto, P(None, "c"), x)),
        "unsharded": jax.jit(jax.vmap(jax.grad(loss(jmp.sort, jmp.merge))))(x),
    }
    for how, g in got.items():
        np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=1e-5, atol=1e-5,
                                   err_msg=how)
    return "explicit, auto, unsharded"


def check_zero_rows(rng: np.random.Generator) -> str:
    """A sort and a merge in a user's shard_map on arrays with a batch dimension of size 0 return
    empty rows (the exchange's trip count over no rows is 0)."""
    mesh = jax.make_mesh((G,), ("c",), axis_types=(jax.sharding.AxisType.Auto,))
    spec = P(None, None, "c")
    x = keys(rng, np.float32, (2, 0, G * 16))
    f = jax.jit(jax.shard_map(
        lambda v: (jmp.argsort(v, axis_name="c"), jmp.merge(v, v, axis_name="c")), mesh=mesh,
        in_specs=spec, out_specs=(spec, spec)))
    order, merged = f(*put(mesh, spec, x))
    assert order.shape == x.shape, order.shape
    assert merged.shape == (2, 0, 2 * G * 16), merged.shape
    return "argsort and merge of (2, 0, 128)"


def check_eager(fn: Callable, x: np.ndarray, mesh: Any, spec: P) -> str:
    """fn on a NamedSharding'd array outside jit equals fn on the unsharded array, sharded as
    its input."""
    sh = NamedSharding(mesh, spec)
    got = fn(jax.device_put(x, sh))
    assert_same(got, _ref_of(fn)(local0(x)))
    assert_sharding(got, sh)
    return f"{x.dtype} {x.shape} {spec}"


def _ref_of(fn: Callable) -> Callable:
    """The jnp function that fn (a jmp sort or argsort, maybe a partial) drops in for."""
    base = fn.func if isinstance(fn, functools.partial) else fn
    kw = fn.keywords if isinstance(fn, functools.partial) else {}
    ref = {jmp.sort: jnp.sort, jmp.argsort: functools.partial(jnp.argsort, stable=True)}[base]
    return functools.partial(ref, **kw)


def check_grad(loss: Callable, x: np.ndarray, w: np.ndarray, descending: bool, mesh: Any
               ) -> None:
    """jit(grad(loss)) on sharded x, w equals the gradient of the jnp loss, unsharded."""
    want = jax.grad(lambda x, w: jnp.sum(jnp.sort(x, descending=descending) * w))(
        local0(x), local0(w))
    got = jax.jit(jax.grad(loss))(*put(mesh, P("d"), x, w))
    assert_same(got, want, "gradient")


def check_grad_integer_outputs(rng: np.random.Generator, mesh: Any, n: int) -> str:
    """grad with respect to float values of calls that also return integers (integer keys, an
    integer leaf, merge indices), on explicit axes under jit and in a user's shard_map: their
    zero tangents typed as the outputs (varying along the split axis)."""
    k = rng.integers(0, 5, G * n).astype(np.int32)
    v = rng.standard_normal(G * n).astype(np.float32)
    w = rng.standard_normal(G * n).astype(np.float32)
    a, b = np.sort(k[: G * n // 2]), np.sort(k[G * n // 2:])

    def sort_by_int_key(v, w, k, **kw):
        return jnp.sum(jmp.sort_by_key(k, v, **kw)[1] * w)

    def int_leaf(v, w, k, **kw):
        _, out = jmp.sort_by_key(v, {"v": v, "id": k}, **kw)
        return jnp.sum(out["v"] * w)

    def lax_sort_int_key(v, w, k, **kw):
        return jnp.sum(jmp.lax_sort((k, v), num_keys=1, **kw)[1] * w)

    for loss in [sort_by_int_key, int_leaf, lax_sort_int_key]:
        want = jax.grad(loss)(*map(local0, (v, w, k)))
        got = jax.jit(jax.grad(loss))(*put(mesh, P("d"), v, w, k))
        assert_same(got, want, f"{loss.__name__}, explicit")
        f = jax.shard_map(jax.grad(functools.partial(loss, axis_name="d")), mesh=mesh,
                          in_specs=P("d"), out_specs=P("d"))
        assert_same(jax.jit(f)(*put(mesh, P("d"), v, w, k)), want, f"{loss.__name__}, shard_map")
    # the merges: a, b sorted and split (merge_by_key of integer keys; merge with indices)
    va, vb = v[: len(a)], v[len(a):]
    want = jax.grad(lambda x, y: jnp.sum(jmp.merge_by_key(a, b, x, y)[1] * w),
                    argnums=(0, 1))(va, vb)
    got = jax.jit(jax.grad(lambda x, y, a, b: jnp.sum(jmp.merge_by_key(a, b, x, y)[1] * w),
                           argnums=(0, 1)))(*put(mesh, P("d"), va, vb, a, b))
    assert_same(got, want, "merge_by_key of integer keys, explicit")
    fa, fb = np.sort(va), np.sort(vb)
    want = jax.grad(lambda x, y: jnp.sum(jmp.merge(x, y, return_indices=True)[0] * w),
                    argnums=(0, 1))(fa, fb)
    got = jax.jit(jax.grad(lambda x, y: jnp.sum(jmp.merge(x, y, return_indices=True)[0] * w),
                           argnums=(0, 1)))(*put(mesh, P("d"), fa, fb))
    assert_same(got, want, "merge with indices, explicit")
    return "sort_by_key, an integer leaf, lax_sort, merge_by_key, merge indices"


def check_export(x: np.ndarray, mesh: Any) -> None:
    """jax.export of jit(jmp.sort) on the split array and of a shard_map'ed argsort: the
    serialized programs called back give the unsharded results, split as the input."""
    from jax import export

    (xs,) = put(mesh, P("d"), x)
    exp = export.deserialize(export.export(
        jax.jit(jmp.sort), disabled_checks=jmp.export_disabled_checks())(xs).serialize())
    got = exp.call(xs)
    assert_same(got, jnp.sort(local0(x)), "exported sort")
    assert got.sharding.spec == P("d"), got.sharding
    f = jax.shard_map(lambda x: jmp.argsort(x, axis_name="d"), mesh=mesh, in_specs=P("d"),
                      out_specs=P("d"))
    exp2 = export.export(jax.jit(f), disabled_checks=jmp.export_disabled_checks())(xs)
    assert_same(exp2.call(xs), jnp.argsort(local0(x), stable=True), "exported argsort")


def check_merge_search(rng: Any, mesh: Any, n: int) -> None:
    """merge (values, positions, descending) and searchsorted (both sides) of arrays split along
    the axis, under jit and inside shard_map: the unsharded results."""
    a = np.sort(rng.integers(0, 40, G * n)).astype(np.float32)
    b = np.sort(rng.integers(0, 40, G * n // 2)).astype(np.float32)
    a[a == 7] = -0.0  # ties of -0.0 / +0.0 between a and b keep a first
    b[b == 3] = 0.0
    a, b = np.sort(a), np.sort(b)
    xa, xb = put(mesh, P("d"), a, b)
    ra, rb = local0(a), local0(b)
    got = jax.jit(lambda a, b: jmp.merge(a, b, return_indices=True))(xa, xb)
    assert_same(got, jmp.merge(ra, rb, return_indices=True), "merge")
    assert got[0].sharding.spec == P("d"), got[0].sharding
    da, db = put(mesh, P("d"), a[::-1].copy(), b[::-1].copy())
    assert_same(jax.jit(lambda a, b: jmp.merge(a, b, descending=True))(da, db),
                jmp.merge(ra[::-1], rb[::-1], descending=True), "merge descending")
    f = jax.shard_map(lambda a, b: jmp.merge(a, b, axis_name="d"), mesh=mesh,
                      in_specs=(P("d"), P("d")), out_specs=P("d"))
    assert_same(jax.jit(f)(xa, xb), jmp.merge(ra, rb), "merge in shard_map")
    v = rng.integers(-2, 43, 5 * G).astype(np.float32)
    for side in ("left", "right"):
        want = jnp.searchsorted(ra, local0(v), side=side)
        assert_same(jax.jit(lambda a, v, s=side: jmp.searchsorted(a, v, side=s))(xa, v), want,
                    f"searchsorted {side}")
        g = jax.shard_map(lambda a, v, s=side: jmp.searchsorted(a, v, side=s, axis_name="d"),
                          mesh=mesh, in_specs=(P("d"), P("d")), out_specs=P("d"))
        assert_same(jax.jit(g)(*put(mesh, P("d"), a, v)), want, f"searchsorted {side} in map")


def _sbk(k, v, descending=False):
    return jmp.sort_by_key(k, v, descending=descending, axis_name="d")


def _sbk_plain(k, v, descending=False):
    return jmp.sort_by_key(k, v, descending=descending)


def _lax3(a, b, c):
    return jmp.lax_sort((a, b, c), num_keys=2, axis_name="d")


def _lax3_plain(a, b, c):
    return jmp.lax_sort((a, b, c), num_keys=2)


def _check_explicit(fn: Callable, args: tuple, want: Any, mesh: Any) -> None:
    got = fn(*put(mesh, P("d"), *args))
    assert_same(got, want)
    assert_sharding(got, NamedSharding(mesh, P("d")))


def check_uneven(mesh: Any) -> str:
    x = np.arange(G * 100 + 1, dtype=np.float32)
    try:
        xs = jax.device_put(x, NamedSharding(mesh, P("d")))
    except ValueError as e:
        assert "jax_mergepath" not in str(e), e
        return f"skipped: jax refuses to place {x.shape} on {G} devices ({type(e).__name__})"
    try:
        JIT_SORT(xs)
    except ValueError as e:
        assert "'d'" in str(e) or '"d"' in str(e) or " d " in str(e), f"axis not named: {e}"
        assert "divisible" in str(e) or "multiple" in str(e), f"requirement not said: {e}"
        return f"ValueError: {e}"
    raise AssertionError("no ValueError for a global length not divisible by the devices")


if __name__ == "__main__":
    sys.exit(main())
