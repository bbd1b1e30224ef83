"""Cases for profiling one operation on a GPU (ncu / nsys): each runs the jitted call `--calls`
times on fresh random sorted/unsorted data after checking it against a jnp baseline.

    python3 perf/gpu/probe_cases.py CASE [--calls N]     # from the repository root

Cases: vmapD (2^25 / D rows of D+D int32 merged: vmap512 2^16 rows, vmap16 2^21), vmapNi (the same
with return_indices, e.g. vmap32i), merge_i32 / merge_f32 / merge_f64 / merge_i64 (2^26 + 2^26;
merge_i32_N etc.: 2^N outputs), sort_presorted / argsort_presorted (int32 2^27 already sorted),
sort_tail (int32 2^27 sorted but for its last 1024 keys), sort_i32 / sort_i64 /
argsort_i64 (2^27 random; sort_i64_N / argsort_i64_N: 2^N), sort_i32_N / argsort_i32_N (int32 2^N
random, e.g. sort_i32_20), search (searchsorted of 2^23 sorted queries in 2^23 sorted int32;
search_N: 2^N in 2^N), rows64 / rows512 / rows4096 (2^26 int32 sorted as rows of that length),
plus1_f32 (x + 1 of 2^27 float32: an XLA kernel of a merge's bytes), plus1_small (x + 1 of 1024
int32: the dispatch floor), is_sorted_20 (is_sorted of int32 2^20 random), stream / stream_jnp
(examples/sorted_stream.py --size gpu, one scan of 32 steps, jax_mergepath / jnp only), topk_R_D_K
(top_k of R rows of D float32 normals, k = K: its indices against lax.top_k's).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jax_mergepath as jmp

# The repository root, last on sys.path: perf.bench's helpers, and jax_mergepath stays the
# installed package (imported above).
sys.path.append(str(Path(__file__).resolve().parents[2]))
from perf.bench.data import sorted_keys  # noqa: E402
from perf.bench.trace import device_events  # noqa: E402


def sorted_rows(rows: int, d: int, dtype, seed: int) -> jax.Array:
    return sorted_keys(jax.random.key(seed), (rows, d), dtype)


def case(name: str):
    if vmapped := re.fullmatch(r"vmap(\d+)(i?)", name):  # vmapNi: with return_indices
        d, indices = int(vmapped.group(1)), vmapped.group(2) == "i"
        rows = 2**26 // (2 * d)
        a, b = sorted_rows(rows, d, jnp.int32, 1), sorted_rows(rows, d, jnp.int32, 2)
        want = jnp.sort(jnp.concatenate([a, b], -1), -1)
        if indices:
            f = jax.jit(jax.vmap(lambda x, y: jmp.merge(x, y, return_indices=True)[0]))
        else:
            f = jax.jit(jax.vmap(jmp.merge))
        return f, (a, b), want
    if merged := re.fullmatch(r"merge_(i32|f32|f64|i64)(?:_(\d+))?", name):  # 2^N outputs
        dtype = {"i32": jnp.int32, "f32": jnp.float32, "f64": jnp.float64, "i64": jnp.int64}[
            merged[1]]
        half = 2 ** (int(merged[2] or 27) - 1)
        a, b = sorted_rows(1, half, dtype, 1)[0], sorted_rows(1, half, dtype, 2)[0]
        return jax.jit(jmp.merge), (a, b), jnp.sort(jnp.concatenate([a, b]))
    if name in ("stream", "stream_jnp"):  # examples/sorted_stream.py at --size gpu, one scan
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
        import sorted_stream as ss

        insert = ss.jmp_insert if name == "stream" else ss.jnp_insert
        queue = ss.initial_queue(np.random.default_rng(0), 2**24)
        f = jax.jit(partial(ss.run, steps=32, batch=2**16, insert=insert))
        want = jax.jit(partial(ss.run, steps=32, batch=2**16, insert=ss.jnp_insert))(
            queue, jax.random.key(0))
        return (lambda q, k: f(q, k)[0][0]), (queue, jax.random.key(0)), want[0][0]
    if sized := re.fullmatch(r"topk_(\d+)_(\d+)_(\d+)", name):  # top_k of R x D float32, k = K
        rows, d, k = (int(g) for g in sized.groups())
        x = jax.random.normal(jax.random.key(9), (rows, d), jnp.float32)
        return (jax.jit(lambda v: jmp.top_k(v, k)[1]), (x,),
                jax.lax.top_k(x, k)[1])
    if name == "plus1_f32":  # one XLA kernel reading and writing as much as a 2^27 merge
        x = jax.random.normal(jax.random.key(6), (2**27,), jnp.float32)
        return jax.jit(lambda v: v + 1), (x,), x + 1
    if name == "plus1_small":  # the dispatch floor: a jitted call with almost no GPU work
        x = jnp.arange(1024, dtype=jnp.int32)
        return jax.jit(lambda v: v + 1), (x,), x + 1
    if sized := re.fullmatch(r"(arg)?sort_i32_(\d+)", name):  # (arg)sort of 2^N random int32
        # (sort_i32_20: host work and launches weigh most)
        x = jax.random.randint(jax.random.key(4), (2 ** int(sized[2]),), -(2**30), 2**30,
                               jnp.int32)
        if sized[1]:
            return jax.jit(jmp.argsort), (x,), jnp.argsort(x, stable=True).astype(jnp.int32)
        return jax.jit(jmp.sort), (x,), jnp.sort(x)
    if name == "is_sorted_20":  # the check every sort with passes runs first (random keys)
        x = jax.random.randint(jax.random.key(4), (2**20,), -(2**30), 2**30, jnp.int32)
        return jax.jit(jmp.is_sorted), (x,), jnp.all(x[1:] >= x[:-1])
    if name.startswith("rows"):  # a row sort: 2^26 int32 as rows of d
        d = int(name[4:])
        x = jax.random.randint(jax.random.key(5), (2**26 // d, d), -(2**30), 2**30, jnp.int32)
        return jax.jit(jmp.sort), (x,), jnp.sort(x, axis=-1)
    if name in ("sort_presorted", "argsort_presorted"):
        x = sorted_rows(1, 2**27, jnp.int32, 3)[0]
        if name == "argsort_presorted":
            return jax.jit(jmp.argsort), (x,), jnp.arange(2**27, dtype=jnp.int32)
        return jax.jit(jmp.sort), (x,), x
    if name == "sort_tail":  # sorted but for its last 1024 keys: its row flag clears at the end
        x = sorted_rows(1, 2**27, jnp.int32, 3)[0]
        x = x.at[-1024:].set(jax.random.randint(jax.random.key(9), (1024,), -(2**30), 2**30,
                                                jnp.int32))
        return jax.jit(jmp.sort), (x,), jnp.sort(x)
    if name == "sort_i32":
        x = jax.random.randint(jax.random.key(4), (2**27,), -(2**30), 2**30, jnp.int32)
        return jax.jit(jmp.sort), (x,), jnp.sort(x)
    if sized := re.fullmatch(r"(arg)?sort_i64(?:_(\d+))?", name):  # 2^N int64 (N = 27 default):
        # sort: quad passes (8-byte keys, 2^30 bytes a pass at 2^27); argsort: 8-byte keys with
        # positions, wide block sort, quad passes
        x = jax.random.randint(jax.random.key(4), (2 ** int(sized[2] or 27),), -(2**62), 2**62,
                               jnp.int64)
        if sized[1]:
            return jax.jit(jmp.argsort), (x,), jnp.argsort(x, stable=True).astype(jnp.int32)
        return jax.jit(jmp.sort), (x,), jnp.sort(x)
    if name == "lexsort":  # the bench's lax_sort num_keys=2 at 2^24 (packed 64-bit keys)
        n = 2**24
        ops = (jax.random.randint(jax.random.key(31), (n,), 0, n // 16, jnp.int32),
               jax.random.normal(jax.random.key(32), (n,), jnp.float32),
               jax.random.randint(jax.random.key(33), (n,), -(2**30), 2**30, jnp.int32))
        f = jax.jit(lambda *o: jmp.lax_sort(o, num_keys=2)[2])
        return f, ops, jax.lax.sort(ops, num_keys=2)[2]
    if sized := re.fullmatch(r"search(?:_(\d+))?", name):  # searchsorted of 2^N sorted queries
        n = 2 ** int(sized[1] or 23)  # in 2^N sorted int32 (search: N = 23)
        a, v = sorted_rows(1, n, jnp.int32, 7)[0], sorted_rows(1, n, jnp.int32, 8)[0]
        f = jax.jit(partial(jmp.searchsorted, sorted_v=True))
        return f, (a, v), jnp.searchsorted(a, v).astype(jnp.int32)
    raise SystemExit(f"unknown case {name}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("case")
    p.add_argument("--calls", type=int, default=2)
    p.add_argument("--timeline", action="store_true",
                   help="trace --calls back-to-back calls; print the GPU timeline's gaps")
    args = p.parse_args()
    jax.config.update("jax_enable_x64", True)
    f, xs, want = case(args.case)
    got = f(*xs)
    assert np.array_equal(np.asarray(got), np.asarray(want)), args.case
    per_call = []
    for _ in range(3):  # like the bench's user-visible time: only the last output kept
        start = time.perf_counter()
        for _ in range(args.calls):
            out = f(*xs)
        issued = time.perf_counter()
        jax.block_until_ready(out)
        done = time.perf_counter()
        del out
        # The host's share: when issuing takes as long as the whole, the host bounds the rate.
        per_call.append((done - start) / args.calls * 1e6)
        print(f"{args.case}: {per_call[-1]:.1f} us/call, issued in "
              f"{(issued - start) / args.calls * 1e6:.1f} us/call "
              f"({args.calls} calls, {jax.devices()[0].device_kind})", flush=True)
    # Last line (wheel_ab.sh keeps it): the best of the three, the least disturbed by whatever
    # else the machine was doing.
    print(f"{args.case}: best {min(per_call):.1f} us/call of 3 x {args.calls} calls", flush=True)
    if args.timeline:
        timeline(f, xs, args.calls)


def timeline(f, xs, calls: int) -> None:
    """Back-to-back calls under a profiler trace (blocked once): every GPU stream event of the
    last calls, and the medians of each kernel's duration and of the idle gap before it."""
    with tempfile.TemporaryDirectory(prefix="jmptl") as tmp:
        jax.block_until_ready(f(*xs))
        jax.profiler.start_trace(tmp)
        out = None
        for _ in range(calls):
            out = f(*xs)
        jax.block_until_ready(out)
        jax.profiler.stop_trace()
        path = glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True)[0]
        events = [(ev.start_ns, ev.duration_ns, ev.name[:60])
                  for ev in device_events(path, "gpu")]
    events.sort()
    gaps: dict = {}
    durs: dict = {}
    for (s0, d0, _), (s1, d1, n1) in zip(events, events[1:], strict=False):
        gaps.setdefault(n1, []).append((s1 - s0 - d0) / 1e3)
        durs.setdefault(n1, []).append(d1 / 1e3)
    for n in durs:
        print(f"  {n:60s} x{len(durs[n]):3d} {statistics.median(durs[n]):9.1f} us, gap before "
              f"{statistics.median(gaps[n]):7.1f} us (max {max(gaps[n]):.1f})")
    span = (events[-1][0] + events[-1][1] - events[0][0]) / 1e3
    print(f"  span {span:.1f} us for {calls} calls = {span / calls:.1f} us/call")
    for s0, d0, n0 in events[-8:]:
        print(f"    {(s0 - events[-8][0]) / 1e3:10.1f} {d0 / 1e3:9.1f}  {n0}")


if __name__ == "__main__":
    main()
