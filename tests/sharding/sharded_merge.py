"""Run in a fresh process with 8 CPU devices (see test_sharded_axis.py): the merge family and the
queries along a SPLIT axis (docs/contract.md "Sharding"), on explicit mesh axes under jax.jit,
eagerly, and inside a user's shard_map (axis_name=): the single-device result bit for bit
(ties: a first; -0.0 / +0.0 and NaN payloads kept; indices global), the output split as a.

The merge moves only its misplaced elements (those whose output device is not their input
device): the exchange's ppermute buffers are one chunk, and the elements its rounds ship, all
devices together, stay within 1.1x the misplaced elements plus a chunk a device pair and round
at a shift (_sharded.merge.merge_traffic); adversarial inputs (all of a below all of b) take the
same algorithm. Also merge_by_key (a pytree of values), merge_runs, co_rank, is_sorted,
searchsorted; grad and jvp of a merge; --x64: the 64-bit dtypes. Prints ``ok <case>`` or
``BAD <case>: why`` per case and exits non-zero on any failure.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \\
        python tests/sharding/sharded_merge.py [--quick] [--x64] [-k SUBSTRING]
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from harness import (
    ANY_COLLECTIVE,
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
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp
from jax_mergepath._sharded.layout import bound_axes
from jax_mergepath._sharded.merge import MERGE_PROBES, merge_chunk, merge_traffic


def sorted_pair(rng: np.random.Generator, dtype: Any, n: int, pattern: str) -> tuple:
    """Sorted a (G n keys) and b (G n / 2): mixed keys, ties across a and b (-0.0 / +0.0 and
    NaNs of several payloads among them), or adversarial layouts."""
    if pattern == "a below b":
        a = np.sort(keys(rng, dtype, G * n, "mixed"))
        return a, np.full(G * n // 2, a[-1]).astype(a.dtype)  # ties with a's last: a first
    if pattern == "b below a":
        b = np.sort(keys(rng, dtype, G * n // 2, "mixed"))
        return np.full(G * n, b[-1]).astype(b.dtype), b
    a = keys(rng, dtype, G * n, pattern)
    b = keys(rng, dtype, G * n // 2, pattern)
    order = jnp.argsort  # the contract's order (NaN last, -0.0 == +0.0), stable
    return (np.asarray(a)[np.asarray(order(local0(a), stable=True))],
            np.asarray(b)[np.asarray(order(local0(b), stable=True))])


def check_merge(a: np.ndarray, b: np.ndarray, mesh: Any, how: str, descending: bool = False,
                names: Any = "d") -> str:
    """merge(a, b, return_indices=True) split over the mesh axes `names` (how: jit / eager /
    shard_map): the single-device result bit for bit, split as a."""
    if descending:
        a, b = a[::-1].copy(), b[::-1].copy()
    fn = functools.partial(jmp.merge, return_indices=True, descending=descending)
    spec = P(names)
    xa, xb = put(mesh, spec, a, b)
    if how == "shard_map":
        got = jax.jit(jax.shard_map(functools.partial(fn, axis_name=names), mesh=mesh,
                                    in_specs=(spec, spec), out_specs=spec))(xa, xb)
    else:
        got = (jax.jit(fn) if how == "jit" else fn)(xa, xb)
        assert_sharding(got, NamedSharding(mesh, spec))
    assert_same(got, fn(local0(a), local0(b)), "merge")
    return f"{a.dtype} {len(a)} + {len(b)}"


def misplaced(a: np.ndarray, b: np.ndarray) -> int:
    """Elements whose output device (in the merge, split evenly) is not their input device."""
    _, idx = jmp.merge(local0(a), local0(b), return_indices=True)
    idx = np.asarray(idx)
    na, nb, no = len(a) // G, len(b) // G, (len(a) + len(b)) // G
    source = np.where(idx < len(a), idx // na, (idx - len(a)) // nb)
    return int(np.sum(source != np.arange(len(idx)) // no))


def check_traffic(a: np.ndarray, b: np.ndarray, mesh: Any, bound: bool) -> str:
    """The merge exchange's shipped elements against the misplaced ones (module docstring), and
    the compiled merge's collectives: ppermutes of one chunk and the co-rank search's probes,
    nothing of the data's size."""
    no = (len(a) + len(b)) // G
    chunk = merge_chunk(no)
    f = jax.jit(jax.shard_map(
        lambda x, y: merge_traffic(x, y, bound_axes("d"), descending=False), mesh=mesh,
        in_specs=(P("d"), P("d")), out_specs=P()))
    shipped = int(f(*put(mesh, P("d"), a, b)))
    moved = misplaced(a, b)
    slack = 2 * G * chunk  # a chunk a device at each side's shifts that hold a piece
    if bound:
        assert shipped <= 1.1 * moved + 2 * slack, (shipped, moved, chunk)
    text = jax.jit(jmp.merge).lower(*put(mesh, P("d"), a, b)).compile().as_text()
    sizes = collective_sizes(text, ANY_COLLECTIVE)
    probes = (G - 1) * MERGE_PROBES  # a round of the co-rank search: its probes' psum
    big = [(op, s) for op, s in sizes if s > max(chunk, probes)]
    assert not big, f"collectives beyond a chunk of {chunk} and {probes} probes: {big}"
    return (f"shipped {shipped} elements for {moved} misplaced of {len(a) + len(b)} "
            f"(chunk {chunk}, largest collective {max((s for _, s in sizes), default=0)})")


def check_family(rng: np.random.Generator, mesh: Any, n: int, how: str, names: Any = "d"
                 ) -> str:
    """merge_by_key (a pytree of values, trailing dims), merge_runs, co_rank, is_sorted and
    searchsorted split over the mesh axes `names` (how: jit / eager / shard_map), against one
    device."""
    spec = P(names)
    a, b = sorted_pair(rng, np.float32, n, "ties3")
    va = {"p": rng.standard_normal((len(a), 3)).astype(np.float32),
          "i": np.arange(len(a), dtype=np.int32)}
    vb = {"p": rng.standard_normal((len(b), 3)).astype(np.float32),
          "i": -np.arange(len(b), dtype=np.int32)}
    x = np.concatenate([a, b])
    split = len(a) - 3
    x = np.concatenate([np.sort(x[:split]), np.sort(x[split:])])
    k = rng.integers(-2, len(a) + len(b) + 3, 2 * G).astype(np.int32)
    v = rng.standard_normal(4 * G).astype(np.float32)
    calls = {  # name: (fn, its arguments; the queries k and v split too inside shard_map)
        "merge_by_key": (jmp.merge_by_key, (a, b, va, vb)),
        "merge_runs": (lambda x, **kw: jmp.merge_runs(x, split, return_indices=True, **kw),
                       (x,)),
        "co_rank": (jmp.co_rank, (k, a, b)),
        "is_sorted": (jmp.is_sorted, (x,)),
        "searchsorted": (functools.partial(jmp.searchsorted, side="right"), (a, v)),
    }
    for name, (fn, args) in calls.items():
        want = fn(*jax.tree.map(local0, args))
        if how in ("jit", "eager"):  # (eager: the queries and merge_runs' split not placed)
            replicated = name in ("co_rank", "searchsorted")  # (the queries: k, v)
            placed = [y if replicated and y is args[0 if name == "co_rank" else 1]
                      else jax.tree.map(lambda z: put(mesh, spec, z)[0], y) for y in args]
            got = (jax.jit(fn) if how == "jit" else fn)(*placed)
        else:
            placed = jax.tree.map(lambda z: put(mesh, spec, z)[0], args)
            out = P() if name == "is_sorted" else spec
            got = jax.jit(jax.shard_map(functools.partial(fn, axis_name=names), mesh=mesh,
                                        in_specs=spec, out_specs=out))(*placed)
        assert_same(got, want, name)
    return ", ".join(calls)


def check_replicated_queries(rng: np.random.Generator, mesh: Any, n: int) -> str:
    """Inside a user's shard_map, queries the same on every device (in_specs P()): one answer,
    typed invariant, so it may leave replicated (out_specs P())."""
    a, b = sorted_pair(rng, np.float32, n, "ties3")
    k = rng.integers(-2, len(a) + len(b) + 3, 5).astype(np.int32)
    v = rng.standard_normal(7).astype(np.float32)
    xa, xb = put(mesh, P("d"), a, b)
    search = jax.jit(jax.shard_map(
        lambda a, v: jmp.searchsorted(a, v, side="right", axis_name="d"), mesh=mesh,
        in_specs=(P("d"), P()), out_specs=P()))
    assert_same(search(xa, v), jmp.searchsorted(local0(a), local0(v), side="right"),
                "searchsorted")
    co_rank = jax.jit(jax.shard_map(lambda k, a, b: jmp.co_rank(k, a, b, axis_name="d"),
                                    mesh=mesh, in_specs=(P(), P("d"), P("d")), out_specs=P()))
    assert_same(co_rank(k, xa, xb), jmp.co_rank(local0(k), local0(a), local0(b)), "co_rank")
    # check_vma=False: no value carries its varying axes, so queries are taken as each device's
    # own, as the contract says (split here: every device different ones)
    kq = rng.integers(-2, len(a) + len(b) + 3, 2 * G).astype(np.int32)
    vq = rng.standard_normal(3 * G).astype(np.float32)
    loose = jax.jit(jax.shard_map(
        lambda a, v, k, b: (jmp.searchsorted(a, v, axis_name="d"),
                            jmp.co_rank(k, a, b, axis_name="d")),
        mesh=mesh, in_specs=P("d"), out_specs=P("d"), check_vma=False))
    got = loose(*put(mesh, P("d"), a, vq, kq, b))
    assert_same(got, (jmp.searchsorted(local0(a), local0(vq)),
                      jmp.co_rank(local0(kq), local0(a), local0(b))), "check_vma=False")
    return "searchsorted, co_rank; split queries with check_vma=False"


def check_is_sorted_boundaries(rng: np.random.Generator, mesh: Any, names: Any) -> str:
    """is_sorted split over the mesh axes `names` (jit, shard_map): a sorted array, and one out of
    order only across each shard boundary in turn (each shard itself sorted)."""
    x = np.sort(rng.standard_normal(G * 16)).astype(np.float32)
    spec = P(names)
    smap = jax.jit(jax.shard_map(lambda x: jmp.is_sorted(x, axis_name=names), mesh=mesh,
                                 in_specs=spec, out_specs=P()))
    cases = [x] + [np.concatenate([x[: 16 * s], x[16 * s:] - 100]) for s in range(1, G)]
    for y in cases:
        want = bool(jmp.is_sorted(local0(y)))
        placed = put(mesh, spec, y)[0]
        got = (bool(jax.jit(jmp.is_sorted)(placed)), bool(smap(placed)))
        assert got == (want, want), (got, want)
    return f"sorted, and out of order at each of {G - 1} boundaries"


def check_closed_over_queries(rng: np.random.Generator, mesh: Any) -> str:
    """Under jit, `a` split on explicit axes and queries closed over, concrete, replicated on an
    auto-axes mesh of the same devices: the search runs split (no all-gather of `a`), its
    answer on a's mesh."""
    a = np.sort(rng.standard_normal(G * 64)).astype(np.float32)
    v = rng.standard_normal(16).astype(np.float32)
    auto = jax.sharding.Mesh(np.array(jax.devices()[:G]), ("d",))
    va = jax.device_put(v, NamedSharding(auto, P()))
    (xa,) = put(mesh, P("d"), a)
    f = jax.jit(lambda x: jmp.searchsorted(x, va))
    got = f(xa)
    assert_same(got, jmp.searchsorted(local0(a), local0(v)), "searchsorted")
    assert_sharding(got, NamedSharding(mesh, P()))
    text = f.lower(xa).compile().as_text()
    gathers = collective_sizes(text, ANY_COLLECTIVE)
    assert not [s for op, s in gathers if op == "all-gather" and s >= len(a)], gathers
    return "split search, the answer on a's mesh"


def check_grad(rng: np.random.Generator, mesh: Any, n: int) -> str:
    """grad and jvp of a merge split over the mesh (explicit axes, jit): jnp's derivative of a
    permutation."""
    a, b = np.sort(distinct(rng, G * n)), np.sort(distinct(rng, G * n // 2) + 0.125)
    w = local0(rng.standard_normal(len(a) + len(b)).astype(np.float32))

    def loss(a, b):
        return jnp.sum(jmp.merge(a, b) * w)

    xa, xb = put(mesh, P("d"), a, b)
    got = jax.jit(jax.grad(loss, argnums=(0, 1)))(xa, xb)
    tangents = jax.jit(lambda a, b: jax.jvp(jmp.merge, (a, b), (a * 2, b * 3)))(xa, xb)
    assert_same(got, jax.grad(loss, argnums=(0, 1))(local0(a), local0(b)), "grad")
    assert_same(tangents, jax.jvp(jmp.merge, (local0(a), local0(b)),
                                  (local0(a) * 2, local0(b) * 3)), "jvp")
    return "grad and jvp"


def main() -> int:
    args = start()
    mesh = jax.make_mesh((G,), ("d",))  # explicit axes
    rng = np.random.default_rng(20260312 + args.x64)
    n = 1000
    core = not args.x64
    dtypes = (["float64", "int64"] if args.x64 else ["float32", "int8", "bfloat16"])
    for dt in dtypes:
        for pattern in ["mixed", "ties3", "a below b", "b below a"]:
            a, b = sorted_pair(rng, dt, n, pattern)
            for how in ["jit", "eager", "shard_map"]:
                quick = (dt in ("float32", "float64") and how != "eager"
                         and pattern in ("mixed", "a below b"))
                case(f"merge {dt} {pattern} {how}",
                     lambda a=a, b=b, how=how: check_merge(a, b, mesh, how), quick=quick)
        case(f"merge {dt} descending", lambda a=a, b=b: check_merge(a, b, mesh, "jit", True),
             quick=dt == "float64")
    a, b = sorted_pair(rng, np.float32, 2**12, "mixed")
    case("traffic: random keys", lambda: check_traffic(a, b, mesh, True), quick=core)
    low = np.arange(G * 2**12, dtype=np.float32)
    case("traffic: a below b (adversarial)",
         lambda: check_traffic(low, low[: G * 2**11] + G * 2**12, mesh, False))
    for how in ["jit", "eager", "shard_map"]:
        case(f"merge family and queries {how}", lambda how=how: check_family(rng, mesh, n, how),
             quick=core)
    case("queries replicated in shard_map", lambda: check_replicated_queries(rng, mesh, n),
         quick=core)
    case("queries closed over on an auto mesh, under jit",
         lambda: check_closed_over_queries(rng, mesh))
    case("grad and jvp of a merge", lambda: check_grad(rng, mesh, n), quick=core)
    # the split axis over both axes of a 2 x 4 mesh, in the other order than the mesh's (the
    # shards in ('d', 'r') order; jax's ppermute numbers devices in the mesh's: Axes.permute)
    mesh2 = jax.make_mesh((2, G // 2), ("r", "d"))
    a, b = sorted_pair(rng, np.float32, n, "mixed")
    for how in ["jit", "eager", "shard_map"]:
        case(f"merge P(('d', 'r')) on a 2x4 mesh {how}", lambda how=how: check_merge(
            a, b, mesh2, how, names=("d", "r")), quick=core and how == "shard_map")
    case("is_sorted P(('d', 'r')) on a 2x4 mesh, shard boundaries",
         lambda: check_is_sorted_boundaries(rng, mesh2, ("d", "r")), quick=core)
    for how in ["jit", "shard_map"]:
        case(f"merge family and queries P(('d', 'r')) on a 2x4 mesh {how}",
             lambda how=how: check_family(rng, mesh2, n, how, names=("d", "r")),
             quick=core and how == "jit")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
