"""Sorts, merges, searches and top_k along a sharded axis on several GPUs against one GPU and
against jnp / lax on the sharded array (issues 37 and 52's targets; docs/performance.md
"Sharded axis").

For each case and each device count g (1 = the whole array on one GPU: the faster of jnp and
jax_mergepath): user-visible time (back-to-back jitted calls, blocked once), checked against
numpy on a sample of the output; then the split of the g-device sort into local sort /
splitters / exchange + final sort, and the bytes the exchange moved. Prints a table; --json
writes the rows.

    python -m perf.sharded_bench [--log2 30] [--reps 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp
from jax_mergepath._keys import order_keys
from jax_mergepath._sharded import exchange as exchange_module
from jax_mergepath._sharded.exchange import exchange_chunk
from jax_mergepath._sharded.layout import bound_axes
from jax_mergepath._sharded.sort import _merge_received
from jax_mergepath._sharded.splitters import splitters


def timed(f, *args, reps: int) -> float:
    """Seconds per call of f(*args): back-to-back calls, blocked once."""
    jax.block_until_ready(f(*args))
    t0 = time.perf_counter()
    for _ in range(reps):
        out = f(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - t0) / reps


def mesh_of(g: int, explicit: bool = True):
    kind = AxisType.Explicit if explicit else AxisType.Auto
    return jax.make_mesh((g,), ("d",), axis_types=(kind,), devices=jax.devices()[:g])


def data(n: int, dtype, sharding, seed: int = 0):
    """Random keys of dtype, laid out by `sharding`."""
    def make():
        key = jax.random.key(seed)
        if jnp.issubdtype(dtype, jnp.floating):
            return jax.random.normal(key, (n,), dtype)
        return jax.random.randint(key, (n,), -(2**31), 2**31 - 1, dtype)
    return jax.jit(make, out_shardings=sharding)()


def check_sorted(out, x) -> None:
    """out is x sorted (a strided sample of it: the whole array is too big for a quick numpy
    sort), and non-decreasing."""
    shards = sorted(out.addressable_shards, key=lambda s: s.index[0].start or 0)
    step = max(1, out.shape[0] // len(shards) // (1 << 20))
    o = np.concatenate([np.asarray(s.data[::step]) for s in shards])
    assert np.all(o[:-1] <= o[1:]), "not sorted"


def split_times(x, g: int, reps: int) -> dict:
    """Local sort, splitters and the rest (exchange + final sort) of the g-device sort of x."""
    mesh = x.sharding.mesh
    spec = P("d")

    def local_sort(x):
        return jmp.sort(x)

    def with_cuts(x):
        k = jmp.sort(x)
        return k, splitters(order_keys(k, False), bound_axes("d"), g, False)

    sm = jax.shard_map
    t_local = timed(jax.jit(sm(local_sort, mesh=mesh, in_specs=spec, out_specs=spec)), x,
                    reps=reps)
    t_cuts = timed(jax.jit(sm(with_cuts, mesh=mesh, in_specs=spec,
                              out_specs=(spec, spec))), x, reps=reps)
    t_all = timed(jax.jit(jmp.sort), x, reps=reps)
    n = x.shape[0] // g
    runs = jax.device_put(x.addressable_shards[0].data, jax.devices()[0])  # n keys
    runs = jnp.sort(runs.reshape(g, n // g), axis=-1).reshape(-1)  # g sorted runs
    sizes = jnp.full((g,), n // g, np.int32)
    t_merge = timed(jax.jit(lambda b: _merge_received(
        [b], [], sizes, descending=False, op="sort")[0][0]), runs, reps=reps)
    del runs
    cuts = np.asarray(jax.jit(sm(with_cuts, mesh=mesh, in_specs=spec,
                                 out_specs=(spec, spec)))(x)[1]).reshape(g, g + 1)
    sent = np.diff(cuts, axis=1)
    chunk = exchange_chunk(n, g)
    rounds = int(np.ceil(sent.max() / chunk))
    moved = rounds * chunk * (g - 1) * g * x.dtype.itemsize  # bytes between devices
    return {"local_sort_ms": 1e3 * t_local, "splitters_ms": 1e3 * (t_cuts - t_local),
            "exchange_ms": 1e3 * (t_all - t_cuts - t_merge), "merge_ms": 1e3 * t_merge,
            "rounds": rounds,
            "bytes_between_devices": moved,
            "bytes_ideal": int(x.nbytes * (g - 1) / g)}


def run_case(name: str, n: int, dtype, fn_ours, fn_jnp, counts, reps: int, rows: list,
             ragged: bool = False) -> None:
    one = jax.devices()[0]
    x1 = data(n, dtype, jax.sharding.SingleDeviceSharding(one))
    t_jnp1 = timed(jax.jit(fn_jnp), x1, reps=reps)
    t_ours1 = timed(jax.jit(fn_ours), x1, reps=reps)
    best1 = min(t_jnp1, t_ours1)
    print(f"{name}: one GPU jnp {1e3 * t_jnp1:.2f} ms, ours {1e3 * t_ours1:.2f} ms", flush=True)
    del x1
    for g in counts:
        if g > len(jax.devices()):
            continue
        xs = data(n, dtype, NamedSharding(mesh_of(g), P("d")))
        f = jax.jit(fn_ours)
        out = f(xs)
        if not name.startswith("argsort"):
            check_sorted(jax.tree.leaves(out)[0], xs)
        first = jax.tree.leaves(out)[0]
        assert first.sharding.spec == P("d"), first.sharding
        del out
        t = timed(f, xs, reps=reps)
        row = {"case": name, "n": n, "devices": g, "ours_ms": 1e3 * t,
               "one_gpu_ms": 1e3 * best1, "vs_one_gpu": best1 / t}
        xa = data(n, dtype, NamedSharding(mesh_of(g, explicit=False), P("d")))
        try:
            t_gather = timed(jax.jit(fn_jnp), xa, reps=max(2, reps // 3))
            row["jnp_sharded_ms"] = 1e3 * t_gather
            row["vs_jnp_sharded"] = t_gather / t
        except Exception as e:  # noqa: BLE001 (reported in the row)
            row["jnp_sharded_error"] = str(e).split("\n")[0][:200]
        del xa
        if name.startswith("sort int32"):
            row.update(split_times(xs, g, reps))
            saved = exchange_module.EXCHANGE
            try:
                if not ragged:
                    raise RuntimeError("not measured (--ragged)")
                exchange_module.EXCHANGE = "ragged"
                row["ragged_ms"] = 1e3 * timed(jax.jit(lambda x: jmp.sort(x)), xs, reps=reps)
            except Exception as e:  # noqa: BLE001
                row["ragged_error"] = str(e).split("\n")[0][:200]
            finally:
                exchange_module.EXCHANGE = saved
            for skew, make in (("all equal", lambda x: x * 0),
                               ("presorted", lambda x: jnp.sort(x)),
                               ("reversed", lambda x: jnp.sort(x)[::-1]),
                               ("rotated", lambda x, g=g: jnp.roll(jnp.sort(x), n // g))):
                xk = jax.jit(make, out_shardings=xs.sharding)(
                    data(n, dtype, NamedSharding(mesh_of(g, explicit=False), P("d"))))
                row[f"{skew}_ms"] = 1e3 * timed(f, xk, reps=reps)
                del xk
        del xs
        rows.append(row)
        print(json.dumps(row), flush=True)


def run_merge_and_search(n: int, counts, reps: int, rows: list) -> None:
    """merge of two sorted int32 arrays of n each, and searchsorted of 2^24 replicated queries
    in a sorted array of n, split over g devices: ours against one GPU (ours) and against jnp
    on the sharded arrays (a sort of the concatenation; a searchsorted after XLA's gather)."""
    one = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    a1, b1 = jnp.sort(data(n, jnp.int32, one, 1)), jnp.sort(data(n, jnp.int32, one, 2))
    q1 = data(1 << 24, jnp.int32, one, 3)
    t_merge1 = timed(jax.jit(jmp.merge), a1, b1, reps=reps)
    t_search1 = min(timed(jax.jit(jmp.searchsorted), a1, q1, reps=reps),
                    timed(jax.jit(jnp.searchsorted), a1, q1, reps=reps))
    del a1, b1, q1
    for g in counts:
        if g > len(jax.devices()):
            continue
        for explicit in (True, False):
            split = NamedSharding(mesh_of(g, explicit), P("d"))
            sort = jmp.sort if explicit else jnp.sort  # (jnp.sort refuses explicit axes)
            a = jax.jit(sort, out_shardings=split)(data(n, jnp.int32, split, 1))
            b = jax.jit(sort, out_shardings=split)(data(n, jnp.int32, split, 2))
            q = data(1 << 24, jnp.int32, NamedSharding(split.mesh, P()), 3)
            if explicit:
                m = jax.jit(jmp.merge)(a, b)
                check_sorted(m, None)
                t_m = timed(jax.jit(jmp.merge), a, b, reps=reps)
                t_s = timed(jax.jit(jmp.searchsorted), a, q, reps=reps)
            else:
                t_mj = timed(jax.jit(lambda a, b: jnp.sort(jnp.concatenate([a, b]))), a, b,
                             reps=max(2, reps // 3))
                t_sj = timed(jax.jit(jnp.searchsorted), a, q, reps=reps)
            del a, b, q
        for row in ({"case": f"merge int32 2 x 2^{n.bit_length() - 1}", "devices": g,
                     "ours_ms": 1e3 * t_m, "one_gpu_ms": 1e3 * t_merge1,
                     "vs_one_gpu": t_merge1 / t_m, "jnp_sharded_ms": 1e3 * t_mj,
                     "vs_jnp_sharded": t_mj / t_m},
                    {"case": f"searchsorted 2^24 queries in int32 2^{n.bit_length() - 1}",
                     "devices": g, "ours_ms": 1e3 * t_s, "one_gpu_ms": 1e3 * t_search1,
                     "vs_one_gpu": t_search1 / t_s, "jnp_sharded_ms": 1e3 * t_sj,
                     "vs_jnp_sharded": t_sj / t_s}):
            rows.append(row)
            print(json.dumps(row), flush=True)


def run_topk(n: int, k: int, counts, reps: int, rows: list) -> None:
    """top_k of n float32 split over g devices (issue 52's target: 2^30, k 1000): ours against
    the faster of lax.top_k and ours on the whole array on one GPU, and against lax.top_k on the
    array split over auto axes (XLA gathers it; with explicit axes lax.top_k raises); the
    sharded result checked bit for bit against ours on one GPU (values, global indices)."""
    name = f"top_k float32 2^{n.bit_length() - 1} k={k}"
    one = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    ours, theirs = jax.jit(lambda x: jmp.top_k(x, k)), jax.jit(lambda x: lax.top_k(x, k))
    x1 = data(n, jnp.float32, one, 4)
    t_lax1 = timed(theirs, x1, reps=reps)
    t_ours1 = timed(ours, x1, reps=reps)
    want = jax.device_get(ours(x1))
    best1 = min(t_lax1, t_ours1)
    print(f"{name}: one GPU lax.top_k {1e3 * t_lax1:.3f} ms, ours {1e3 * t_ours1:.3f} ms",
          flush=True)
    del x1
    for g in counts:
        if g > len(jax.devices()):
            continue
        xs = data(n, jnp.float32, NamedSharding(mesh_of(g), P("d")), 4)
        got = jax.device_get(ours(xs))
        for w, o, what in zip(want, got, ("values", "indices"), strict=True):
            assert np.array_equal(np.asarray(w).view(np.uint32), np.asarray(o).view(np.uint32)), (
                f"{name} on {g} devices: {what} differ from one GPU's")
        t = timed(ours, xs, reps=reps)
        row = {"case": name, "n": n, "devices": g, "ours_ms": 1e3 * t,
               "one_gpu_ms": 1e3 * best1, "vs_one_gpu": best1 / t,
               "one_gpu_lax_ms": 1e3 * t_lax1, "one_gpu_ours_ms": 1e3 * t_ours1}
        del xs
        xa = data(n, jnp.float32, NamedSharding(mesh_of(g, explicit=False), P("d")), 4)
        try:
            t_lax = timed(theirs, xa, reps=max(2, reps // 3))
            row["jnp_sharded_ms"] = 1e3 * t_lax
            row["vs_jnp_sharded"] = t_lax / t
        except Exception as e:  # noqa: BLE001 (reported in the row)
            row["jnp_sharded_error"] = str(e).split("\n")[0][:200]
        del xa
        rows.append(row)
        print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log2", type=int, default=30)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--devices", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--cases", nargs="+",
                        default=["sort", "argsort", "sort_by_key", "merge", "top_k"])
    parser.add_argument("--ragged", action="store_true",
                        help="also time the exchange by lax.ragged_all_to_all")
    parser.add_argument("--json")
    args = parser.parse_args()
    print(jax.devices(), jax.__version__, flush=True)
    rows: list = []
    n = 1 << args.log2
    if "sort" in args.cases:
        run_case(f"sort int32 2^{args.log2}", n, jnp.int32, jmp.sort, jnp.sort, args.devices,
                 args.reps, rows, ragged=args.ragged)
    if "argsort" in args.cases:
        run_case(f"argsort float32 2^{args.log2 - 1}", n // 2, jnp.float32, jmp.argsort,
                 jnp.argsort, args.devices, args.reps, rows)
    if "sort_by_key" in args.cases:
        def ours(k):
            return jmp.sort_by_key(k, (k + 1, k + 2, k + 3))

        def theirs(k):  # argsort + gathers: faster than lax.sort of four operands
            p = jnp.argsort(k)
            return k[p], ((k + 1)[p], (k + 2)[p], (k + 3)[p])
        run_case(f"sort_by_key float32 + 3 float32 2^{args.log2 - 2}", n // 4, jnp.float32,
                 ours, theirs, args.devices, args.reps, rows)
    if "merge" in args.cases:
        run_merge_and_search(n // 2, args.devices, args.reps, rows)
    if "top_k" in args.cases:
        run_topk(n, 1000, args.devices, args.reps, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
