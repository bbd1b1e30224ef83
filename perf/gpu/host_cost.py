"""The host's time to issue one jitted call, per operation, on inputs so small that the GPU is
idle: what a call costs when the host, not the GPU, bounds the call rate (searchsorted of 2^23,
sorts of 2^16..2^20), with the sorts' method as dispatched or forced (--method merge / radix).
Prints the median over rounds of the issue time per call, and the same
minus a jitted `x + 1`'s (the dispatch floor: JAX's own work).

    python3 perf/gpu/host_cost.py [--calls N] [--rounds R] [--sizes 16,18] [--method radix]
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import jax
import jax.numpy as jnp

import jax_mergepath as jmp
from jax_mergepath import _ffi


def cases(n: int) -> dict:
    x = jnp.sort(jax.random.randint(jax.random.key(1), (n,), 0, 1 << 30, jnp.int32))
    y = jnp.sort(jax.random.randint(jax.random.key(2), (n,), 0, 1 << 30, jnp.int32))
    u = jax.random.randint(jax.random.key(3), (n,), 0, 1 << 30, jnp.int32)
    f = jax.random.uniform(jax.random.key(4), (n,), jnp.float32)
    return {
        "x + 1": (jax.jit(lambda v: v + 1), (x,)),
        "jnp.sort": (jax.jit(jnp.sort), (u,)),
        "merge": (jax.jit(jmp.merge), (x, y)),
        "searchsorted sorted_v": (jax.jit(partial(jmp.searchsorted, sorted_v=True)), (x, y)),
        "searchsorted": (jax.jit(jmp.searchsorted), (x, u)),
        "is_sorted": (jax.jit(jmp.is_sorted), (x,)),
        "sort": (jax.jit(jmp.sort), (u,)),
        "argsort": (jax.jit(jmp.argsort), (u,)),
        "jnp.sort float32": (jax.jit(jnp.sort), (f,)),
        "sort float32": (jax.jit(jmp.sort), (f,)),
        "argsort float32": (jax.jit(jmp.argsort), (f,)),
    }


def issue_time(f, args, calls: int, rounds: int) -> float:
    jax.block_until_ready(f(*args))
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            out = f(*args)
        samples.append((time.perf_counter() - t0) / calls)
        jax.block_until_ready(out)
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--calls", type=int, default=300, help="calls a round (default 300)")
    p.add_argument("--rounds", type=int, default=7, help="rounds, median taken (default 7)")
    p.add_argument("--sizes", default="10,16,20", help="log2 sizes (default 10,16,20)")
    p.add_argument("--method", default="auto", choices=sorted(_ffi.SORT_METHODS),
                   help="the sorts' method (default auto: as dispatched)")
    args = p.parse_args()
    print(f"device: {jax.devices()[0].device_kind}; host issue time per call, median of "
          f"{args.rounds} rounds of {args.calls} calls; sorts {args.method}")
    with _ffi.forced_sort_method(args.method):  # (each case is traced inside it)
        report(args)


def report(args: argparse.Namespace) -> None:
    for log2 in (int(s) for s in args.sizes.split(",")):
        floor = None
        for name, (f, xs) in cases(1 << log2).items():
            t = issue_time(f, xs, args.calls, args.rounds) * 1e6
            floor = t if floor is None else floor
            print(f"  2^{log2:<3d} {name:24s} {t:8.1f} us  (+{t - floor:6.1f} over x + 1)",
                  flush=True)


if __name__ == "__main__":
    main()
