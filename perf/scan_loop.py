"""Sorts inside one jitted `lax.scan`: the dispatch paid once, the kernels back to back, as a
simulation that sorts every step runs them. Each step sorts FRESH unsorted keys, a hash of the
step's salt and the carry (a loop that sorts its own output would time the presorted path):

    sort:            x = bits(sort(keys(x, i)))
    argsort_gather:  p = argsort(keys(x, i)); x = x[p]     (argsort, then a gather by it)

for float32 and int32 keys at 2^10-2^20 keys, ours as dispatched (and forced merge / radix where
the radix path can run) against the fastest JAX spelling (`jnp.sort`; argsort
`lax.sort((k, iota int32), num_keys=1)`, which x64 off `jnp.argsort` is), and the hash alone
(what every variant's step also pays). The median of `--rounds` alternating rounds of whole
scans, a time a step:

    python -m perf.scan_loop [--steps 100] [--rounds 7] [--log2 10 12 ...] [--json PATH] [--kernel]

With --kernel each variant's kernel time a step from a profiler trace is printed under its line
(busy time, and its largest kernels): what a step's time less its kernels' is gaps and launches.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jax_mergepath as jmp
from jax_mergepath import _cpu
from perf.sort_grid import compiled, kernel_busy, per_call

LOG2 = [10, 12, 14, 16, 17, 18, 19, 20]
DTYPES = ["float32", "int32"]
OPS = ["sort", "argsort_gather"]


def fresh_keys(x: jax.Array, step: jax.Array, dtype: str) -> jax.Array:
    """Unsorted keys from the carry's bits and the step: a multiply-xorshift hash (the salt keeps
    a sorted carry from giving sorted keys)."""
    h = x ^ (step.astype(jnp.uint32) * jnp.uint32(0x9E3779B9))
    h = (h ^ (h >> 16)) * jnp.uint32(0x7FEB352D)
    h = (h ^ (h >> 15)) * jnp.uint32(0x846CA68B)
    h = h ^ (h >> 16)
    if dtype == "float32":  # uniform in [0, 1): 23 random mantissa bits
        return (h >> 9).astype(jnp.float32) * jnp.float32(2.0**-23)
    return lax.bitcast_convert_type(h, jnp.int32)


def step_fn(op: str, dtype: str, who: str) -> Callable:
    def bits(k: jax.Array) -> jax.Array:
        return lax.bitcast_convert_type(k, jnp.uint32)

    def step(x: jax.Array, i: jax.Array) -> tuple[jax.Array, None]:
        k = fresh_keys(x, i, dtype)
        if who == "hash":
            return bits(k), None
        if op == "sort":
            s = jnp.sort(k) if who == "xla" else jmp.sort(k)
            return bits(s), None
        if who == "xla":
            _, p = lax.sort((k, lax.iota(jnp.int32, k.shape[0])), num_keys=1)
        else:
            p = jmp.argsort(k)
        return x[p], None

    return step


def scan_fn(op: str, dtype: str, who: str, steps: int) -> Callable:
    step = step_fn(op, dtype, who)

    def run(x: jax.Array) -> jax.Array:
        return lax.scan(step, x, jnp.arange(steps, dtype=jnp.int32))[0]

    return run


def kernel_times(variants: dict[str, Callable], x: jax.Array, steps: int) -> dict:
    """Each variant's kernel busy time a step (us) and its six largest kernels', from a trace."""
    out = {}
    for k, f in variants.items():
        busy, top = kernel_busy(f, (x,), repeats=3)
        if top:
            out[k] = {"busy": busy * 1e6 / steps,
                      "top": {n: s * 1e6 / steps for n, s in top.items()}}
    return out


def run_cell(op: str, dtype: str, log2: int, steps: int, rounds: int,
             kernel: bool = False) -> dict:
    n = 1 << log2
    x = jax.random.bits(jax.random.key(log2), (n,), jnp.uint32)
    payload = 0 if op == "sort" else 4
    radix_possible = bool(_cpu.sort_takes_radix(2, 4, payload, 1, n, dtype == "int32"))
    auto_radix = _cpu.sort_takes_radix(0, 4, payload, 1, n, dtype == "int32")
    dispatched = "radix" if auto_radix else "merge"
    variants = {
        "hash": compiled(scan_fn(op, dtype, "hash", steps), (x,), None),
        "xla": compiled(scan_fn(op, dtype, "xla", steps), (x,), None),
        "merge": compiled(scan_fn(op, dtype, "ours", steps), (x,), "merge"),
    }
    if radix_possible:
        variants["radix"] = compiled(scan_fn(op, dtype, "ours", steps), (x,), "radix")
    outs = {k: np.asarray(f(x)) for k, f in variants.items() if k != "hash"}
    agree = all(np.array_equal(o, outs["xla"]) for o in outs.values())
    calls = max(2, min(50, int(0.05 / max(per_call(variants["xla"], (x,), 1), 1e-6))))
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for k, f in variants.items():
            samples[k].append(per_call(f, (x,), calls) / steps)
    t = {k: statistics.median(v) for k, v in samples.items()}
    t["auto"] = t[dispatched]
    return {"op": op, "dtype": dtype, "log2": log2, "dispatched": dispatched, "agree": agree,
            "us_a_step": {k: v * 1e6 for k, v in t.items()},
            "vs_xla": t["xla"] / t["auto"],
            "kernel_us_a_step": kernel_times(variants, x, steps) if kernel else {}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--log2", type=int, nargs="*", default=LOG2)
    ap.add_argument("--dtype", nargs="*", default=DTYPES)
    ap.add_argument("--op", nargs="*", default=OPS)
    ap.add_argument("--json", default=None)
    ap.add_argument("--kernel", action="store_true", help="kernel times from a profiler trace")
    a = ap.parse_args()
    print(f"# {jax.devices()[0].device_kind}, jax {jax.__version__}, {a.steps} steps a scan, "
          f"median of {a.rounds} rounds, us a step (the hash alone beside)")
    print(f"# {'op':15s} {'dtype':8s} {'n':>8s} {'hash':>7s} {'xla':>8s} {'merge':>8s} "
          f"{'radix':>8s} {'auto':>6s} {'vs xla':>7s}")
    done = []
    for op in a.op:
        for dtype in a.dtype:
            for log2 in a.log2:
                c = run_cell(op, dtype, log2, a.steps, a.rounds, a.kernel)
                u = c["us_a_step"]
                radix = f"{u['radix']:8.2f}" if "radix" in u else " " * 8
                flag = "" if c["agree"] else "  DISAGREE"
                print(f"  {op:15s} {dtype:8s} {f'2^{log2}':>8s} {u['hash']:7.2f} "
                      f"{u['xla']:8.2f} {u['merge']:8.2f} {radix} {c['dispatched']:>6s} "
                      f"{c['vs_xla']:6.2f}x{flag}", flush=True)
                for k, kt in c["kernel_us_a_step"].items():
                    top = ", ".join(f"{n[:40]} {us:.1f}" for n, us in kt["top"].items())
                    print(f"    kernel {k}: {kt['busy']:.1f} us a step ({top})", flush=True)
                done.append(c)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": jax.devices()[0].device_kind, "jax": jax.__version__,
                       "steps": a.steps, "cells": done}, f, indent=1)


if __name__ == "__main__":
    main()
