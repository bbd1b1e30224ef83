"""Run in a fresh process with 8 CPU devices (see test_sharded_axis.py): calls on arrays split over
AUTO mesh axes (``jax.sharding.Mesh``'s axes; nothing in the types) under plain ``jax.jit`` take
the sharded algorithm (docs/contract.md "Sharding"): the single-device result bit for bit, the
output sharded as the input, and no collective in the compiled program that grows with the shard
beyond the splitter samples (at most 1/32 of the shard a round) and the exchange.

Cases: the sort family, the merge family and the queries on a split axis; shardings that reach
the call only through ``in_shardings`` or ``with_sharding_constraint``; a 2-D mesh (rows on one
axis, the sorted axis on the other, or sorted along the short axis); vmap, grad and jvp;
jax.export; check_sorted_inputs(); a single-device program on the 8-device host (the same
program as without the wrapper); ``--gspmd``: under the GSPMD partitioner. Prints
``ok <case>`` or ``BAD <case>: why`` per case and exits non-zero on any failure.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \\
        python tests/sharding/auto_axes.py [--quick] [--gspmd] [--x64] [-k SUBSTRING]
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from harness import (
    ANY_COLLECTIVE,
    EXCHANGE,
    G,
    assert_same,
    assert_sharding,
    case,
    collective_sizes,
    distinct,
    finish,
    keys,
    local0,
    put,
    start,
)
from jax.experimental import checkify
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp

SAMPLE_SHARE = 32  # _sharded.splitters: a round gathers at most n / 32 keys a device


def check_jit(fn, args: tuple, ref, mesh: Any, spec: P, out_spec: P | None = None) -> str:
    """jax.jit(fn) on args split by spec over the auto mesh: ref's result (computed on one
    device), every output split as out_spec (default: spec)."""
    placed = put(mesh, spec, *args)
    got = jax.jit(fn)(*placed)
    want = ref(*[local0(a) for a in args])
    assert_same(got, want)
    assert_sharding(got, NamedSharding(mesh, spec if out_spec is None else out_spec))
    return f"{args[0].dtype} {args[0].shape} {spec}"


def check_program(fn, args: tuple, n: int, g: int = G, rows: int = 1) -> str:
    """The compiled program's collectives (shards of n keys on g devices): an exchange
    (all-to-all / collective-permute), and no all-gather, all-reduce or reduce-scatter larger
    than the splitter samples' bound, rows x max(n / SAMPLE_SHARE, g (g - 1) min(n, 16)) keys
    (a round's samples of every device for every cut; below it, the open ranges' ints)."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    sizes = collective_sizes(text)
    bound = rows * max(n // SAMPLE_SHARE, g * (g - 1) * min(n, 16))
    big = [(op, s) for op, s in sizes if s > bound]
    assert not big, f"collectives beyond the samples' bound {bound} (shard {n}): {big}"
    assert EXCHANGE.search(text), "no exchange in the program"
    gathers = [s for op, s in sizes if op == "all-gather"]
    return (f"largest all-gather {max(gathers, default=0)} elements of a shard of {n} "
            f"({100 * max(gathers, default=0) / n:.1f}%)")


def check_no_collective(fn, args: tuple) -> str:
    text = jax.jit(fn).lower(*args).compile().as_text()
    found = collective_sizes(text, ANY_COLLECTIVE)
    assert not found, f"collectives: {found}"
    return "no collective"


def check_single_device(rng: np.random.Generator) -> str:
    """A program on one device of this 8-device host: the wrapper's program compiles to the
    single-device one (the same custom calls, no collective), with the same results, also
    under grad and vmap."""
    from jax_mergepath._sharded import auto

    x = local0(distinct(rng, 4096))
    w = local0(rng.standard_normal(4096).astype(np.float32))
    fns = {"sort": jmp.sort, "grad": jax.grad(lambda x, w: jnp.sum(jmp.sort(x) * w)),
           "vmap": jax.vmap(lambda x, w: jmp.merge(jnp.sort(x), jnp.sort(w)))}
    for name, fn in fns.items():
        args = (x,) if name == "sort" else (x, w)
        if name == "vmap":
            args = (x.reshape(8, -1), w.reshape(8, -1))
        texts = []
        outs = []
        for applies in (auto.applies, lambda arrays: False):
            original, auto.applies = auto.applies, applies
            try:
                f = jax.jit(fn)
                texts.append(f.lower(*args).compile().as_text())
                outs.append(f(*args))
            finally:
                auto.applies = original
        assert_same(outs[0], outs[1], name)
        calls = [sorted(re.findall(r'custom_call_target="(\w+)"', t)) for t in texts]
        assert calls[0] == calls[1], f"{name}: custom calls {calls[0]} != {calls[1]}"
        assert not collective_sizes(texts[0], ANY_COLLECTIVE), name
    return "sort, grad, vmap: the same custom calls and results"


def check_export(x: np.ndarray, mesh: Any) -> str:
    """jax.export of jit(jmp.sort) on auto axes exports the single-device program (which XLA
    partitions), called back with the same result."""
    from jax import export

    (xs,) = put(mesh, P("d"), x)
    exp = export.export(jax.jit(jmp.sort), disabled_checks=jmp.export_disabled_checks())(xs)
    exp = export.deserialize(exp.serialize())
    assert_same(exp.call(xs), jnp.sort(local0(x)), "exported sort")
    return "exported and called back"


def check_checked(rng: np.random.Generator, mesh: Any) -> str:
    """Inside check_sorted_inputs(): a sort carries no check; a merge's check runs on the split
    arrays (shard by shard and across the boundaries) and names the argument."""
    x = keys(rng, np.float32, G * 2**11)
    a = np.sort(keys(rng, np.float32, G * 2**11, "ties3"))
    b = np.sort(keys(rng, np.float32, G * 2**10, "ties3"))
    bad = a.copy()
    bad[2**11 - 1] = np.inf  # device 0's last element above device 1's first: a boundary
    with jmp.check_sorted_inputs():
        f = jax.jit(jmp.sort)
        (xs,) = put(mesh, P("d"), x)
        assert not re.search(r"\bcheck\[", str(jax.make_jaxpr(f)(xs))), "a check in the sort"
        assert_same(f(xs), jnp.sort(local0(x)), "sort")
        merge = checkify.checkify(jax.jit(jmp.merge))
        err, got = merge(*put(mesh, P("d"), a, b))
        bad_err, _ = merge(*put(mesh, P("d"), bad, b))
    assert err.get() is None, err.get()
    assert_same(got, jmp.merge(local0(a), local0(b)), "merge")
    assert bad_err.get() is not None and "merge: a is not sorted" in bad_err.get(), bad_err.get()
    return "sort unchecked, merge checked across the shard boundary"


def check_uneven(mesh: Any) -> str:
    """An axis whose length the devices do not divide (placed by with_sharding_constraint, which
    XLA pads): under Shardy the partitioner's error carries the ValueError that names the axis;
    under GSPMD (which aborts the process on a callback's error) the axis is gathered."""
    x = np.arange(G * 100 + 1, dtype=np.float32)[::-1].copy()
    split = NamedSharding(mesh, P("d"))
    f = jax.jit(lambda v: jmp.sort(jax.lax.with_sharding_constraint(v, split)))
    if not jax.config.jax_use_shardy_partitioner:
        assert_same(f(x), jnp.sort(local0(x)))
        return "GSPMD: gathered, the single-device result"
    try:
        f(x)
    except Exception as e:  # noqa: BLE001 - XLA wraps the partitioner's error
        msg = str(e)
        assert "ValueError: jax_mergepath.sort" in msg and "'d'" in msg, msg[-2000:]
        assert "multiple of 8" in msg, msg[-2000:]
        return f"{type(e).__name__} carrying the ValueError"
    raise AssertionError("no error for an axis of 801 elements on 8 devices")


def merge_cases(rng: np.random.Generator, mesh: Any, n: int) -> None:
    a = np.sort(keys(rng, np.float32, G * n, "ties3"))
    b = np.sort(keys(rng, np.float32, G * n // 2, "ties3"))
    d = P("d")
    case("merge with indices", lambda: check_jit(
        functools.partial(jmp.merge, return_indices=True), (a, b),
        functools.partial(jmp.merge, return_indices=True), mesh, d), quick=True)
    case("merge descending", lambda: check_jit(
        functools.partial(jmp.merge, descending=True), (a[::-1].copy(), b[::-1].copy()),
        functools.partial(jmp.merge, descending=True), mesh, d))
    low = np.arange(G * n, dtype=np.float32)
    case("merge adversarial (a below b)", lambda: check_jit(
        jmp.merge, (low, low + G * n), jmp.merge, mesh, d), quick=True)
    va, vb = (rng.standard_normal((len(x), 3)).astype(np.float32) for x in (a, b))
    case("merge_by_key values (n, 3)", lambda: check_jit(
        jmp.merge_by_key, (a, b, va, vb), jmp.merge_by_key, mesh, d))
    xr = np.concatenate([a, b[: G * n // 2 - 3 * G], np.sort(b[G * n // 2 - 3 * G:])])
    xr = np.concatenate([np.sort(xr[:G * n - 5]), np.sort(xr[G * n - 5:])])
    case("merge_runs", lambda: check_jit(
        lambda x: jmp.merge_runs(x, G * n - 5, return_indices=True), (xr,),
        lambda x: jmp.merge_runs(x, G * n - 5, return_indices=True), mesh, d), quick=True)
    k = np.array([0, 3, n, G * n, G * n + 7, G * n * 3 // 2], np.int32)
    case("co_rank (k replicated)", lambda: _check_co_rank(k, a, b, mesh))
    unsorted = a.copy()
    unsorted[n - 1] = np.inf
    for name, x, q in [("sorted", a, True), ("unsorted at a boundary", unsorted, False)]:
        case(f"is_sorted {name}", lambda x=x: check_jit(jmp.is_sorted, (x,), jmp.is_sorted,
                                                      mesh, d, out_spec=P()), quick=q)
    v = rng.standard_normal(5 * G).astype(np.float32)
    for side in ("left", "right"):
        case(f"searchsorted {side}", lambda side=side: _check_search(a, v, side, mesh))


def _check_co_rank(k: np.ndarray, a: np.ndarray, b: np.ndarray, mesh: Any) -> str:
    got = jax.jit(jmp.co_rank)(k, *put(mesh, P("d"), a, b))
    assert_same(got, jmp.co_rank(local0(k), local0(a), local0(b)), "co_rank")
    return f"{len(k)} positions"


def _check_search(a: np.ndarray, v: np.ndarray, side: str, mesh: Any) -> str:
    got = jax.jit(functools.partial(jmp.searchsorted, side=side))(*put(mesh, P("d"), a), v)
    assert_same(got, jnp.searchsorted(local0(a), local0(v), side=side), "searchsorted")
    return f"{len(v)} queries"


def main() -> int:
    args = start("--gspmd")
    jax.config.update("jax_use_shardy_partitioner", not args.gspmd)
    mesh = Mesh(np.array(jax.devices()), ("d",))  # Auto axes (jax.sharding.Mesh's default)
    mesh2 = Mesh(np.array(jax.devices()).reshape(2, G // 2), ("r", "d"))
    assert all(t == jax.sharding.AxisType.Auto for t in mesh.axis_types), mesh
    rng = np.random.default_rng(20260311 + args.x64)
    d = P("d")
    n = 1000

    # -- the sort family on a split axis
    dtypes = ["float32", "int8"] + (["float64", "uint64"] if args.x64 else [])
    for dt in dtypes:
        x = keys(rng, dt, G * n)
        for name, fn, ref in [
            ("sort", jmp.sort, jnp.sort),
            ("sort descending", functools.partial(jmp.sort, descending=True),
             functools.partial(jnp.sort, descending=True)),
            ("argsort", jmp.argsort, functools.partial(jnp.argsort, stable=True)),
            ("argsort descending", functools.partial(jmp.argsort, descending=True),
             functools.partial(jnp.argsort, stable=True, descending=True)),
        ]:
            case(f"{name} {dt}", lambda x=x, fn=fn, ref=ref: check_jit(fn, (x,), ref, mesh, d),
                 quick=dt in ("float32", "float64"))
    kb = keys(rng, np.float32, G * n, "ties3")
    vb = {"pos": rng.standard_normal((G * n, 3)).astype(np.float32),
          "id": np.arange(G * n, dtype=np.int32)}
    sbk = jax.jit(jmp.sort_by_key)
    case("sort_by_key pytree", lambda: (
        assert_same(sbk(*put(mesh, d, kb), jax.tree.map(lambda v: put(mesh, d, v)[0], vb)),
                    jmp.sort_by_key(local0(kb), jax.tree.map(local0, vb)))), quick=True)
    k1 = rng.integers(0, 4, G * n).astype(np.int16)
    case("lax_sort num_keys=2", lambda: check_jit(
        lambda a, b, c: jmp.lax_sort((a, b, c), num_keys=2), (k1, kb, vb["pos"][:, 0].copy()),
        lambda a, b, c: jax.lax.sort((a, b, c), num_keys=2), mesh, d))
    case("sort_key_val", lambda: check_jit(jmp.sort_key_val, (kb, vb["id"]),
                                           jax.lax.sort_key_val, mesh, d))

    # -- shardings that reach the call only through in_shardings or with_sharding_constraint
    x = keys(rng, np.float32, G * n)
    split = NamedSharding(mesh, d)

    def in_shardings():
        got = jax.jit(jmp.sort, in_shardings=split)(x)
        assert_same(got, jnp.sort(local0(x)))
        assert_sharding(got, split)

    def constraint():
        step = jax.jit(lambda v: jmp.sort(jax.lax.with_sharding_constraint(v * 2, split)) + 1)
        got = step(x)
        assert_same(got, jnp.sort(local0(x) * 2) + 1)
        assert_sharding(got, split)

    case("in_shardings", in_shardings, quick=True)
    case("with_sharding_constraint in a larger step", constraint, quick=True)

    # -- 2-D: rows and the sorted axis split, the sorted axis short (splitter samples bounded)
    x2 = keys(rng, np.float32, (4, G * n))
    case("2-D P('r', 'd') on a 2x4 mesh", lambda: check_jit(jmp.sort, (x2,), jnp.sort, mesh2,
                                                           P("r", "d")), quick=True)
    # the sorted axis over both mesh axes in the other order than the mesh's (jax's ppermute
    # numbers devices in the mesh's: Axes.permute): a merge, and a skewed sort (ppermute rounds)
    dr = P(("d", "r"))
    a, b = (np.sort(keys(rng, np.float32, m, "ties3")) for m in (G * n, G * n // 2))
    case("merge P(('d', 'r')) on a 2x4 mesh", lambda: check_jit(
        jmp.merge, (a, b), jmp.merge, mesh2, dr), quick=True)
    skewed = keys(rng, np.float32, G * (2**14 + 8), "reverse")
    case("sort skewed P(('d', 'r')) on a 2x4 mesh", lambda: check_jit(
        jmp.argsort, (skewed,), functools.partial(jnp.argsort, stable=True), mesh2, dr))
    short = keys(rng, np.float32, (4, 2**14))
    short_sort = functools.partial(jmp.sort, axis=0)
    case("sort along a short axis P('r', 'd'), axis=0", lambda: check_jit(
        short_sort, (short,), functools.partial(jnp.sort, axis=0), mesh2, P("r", "d")))
    case("program: a short axis gathers samples of its shard, not 64 a cut",
         lambda: check_program(short_sort, tuple(put(mesh2, P("r", "d"), short)), 2, g=2,
                               rows=2**14 // (G // 2)))

    # -- transformations
    xv = keys(rng, np.float32, (3, G * n))
    case("vmap, the sorted axis split", lambda: check_jit(
        jax.vmap(jmp.sort), (xv,), jax.vmap(jnp.sort), mesh, P(None, "d")), quick=True)
    rows = keys(rng, np.float32, (G, n))
    case("vmap, rows split: no collective", lambda: check_no_collective(
        jax.vmap(jmp.sort), tuple(put(mesh, P("d", None), rows))), quick=True)
    xg, w = distinct(rng, G * n), rng.standard_normal(G * n).astype(np.float32)
    for name, loss, q in [
        ("grad sort", lambda x, w: jnp.sum(jmp.sort(x) * w), True),
        ("grad sort descending", lambda x, w: jnp.sum(jmp.sort(x, descending=True) * w), False),
        ("grad sort_by_key values", lambda x, w: jnp.sum(jmp.sort_by_key(w, x)[1] * w), False),
    ]:
        ref = {"grad sort": lambda x, w: jnp.sum(jnp.sort(x) * w),
               "grad sort descending": lambda x, w: jnp.sum(jnp.sort(x, descending=True) * w),
               "grad sort_by_key values": lambda x, w: jnp.sum(
                   jax.lax.sort_key_val(w, x)[1] * w)}[name]
        case(name, lambda loss=loss, ref=ref: check_jit(
            jax.grad(loss), (xg, w), jax.grad(ref), mesh, d), quick=q)
    case("jvp sort", lambda: check_jit(
        lambda x, t: jax.jvp(jmp.sort, (x,), (t,)), (xg, w),
        lambda x, t: jax.jvp(jnp.sort, (x,), (t,)), mesh, d), quick=True)
    a = np.sort(distinct(rng, G * n))
    b = np.sort(distinct(rng, G * n // 2))
    wm = rng.standard_normal(G * n * 3 // 2).astype(np.float32)

    def merge_loss(a, b):
        return jnp.sum(jmp.merge(a, b) * local0(wm))

    case("grad merge", lambda: (assert_same(
        jax.jit(jax.grad(merge_loss, argnums=(0, 1)))(*put(mesh, d, a, b)),
        jax.grad(merge_loss, argnums=(0, 1))(local0(a), local0(b)))))

    # -- the merge family and the queries
    merge_cases(rng, mesh, n)

    # -- the compiled program: samples bounded by the shard, one exchange
    big = 2**15
    xb = put(mesh, d, keys(rng, np.float32, G * big))
    case("program: sort's collectives are the samples and the exchange",
         lambda: check_program(jmp.sort, tuple(xb), big), quick=True)

    # -- export, the checked mode, single-device programs on this host, uneven lengths
    if not args.gspmd:  # (jax 0.10.2 cannot call an exported sharded program under GSPMD)
        case("export", lambda: check_export(x, mesh), quick=True)
    case("check_sorted_inputs", lambda: check_checked(rng, mesh), quick=True)
    case("single-device programs unchanged", lambda: check_single_device(rng), quick=True)
    case("uneven length: the error names the axis", lambda: check_uneven(mesh), quick=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
