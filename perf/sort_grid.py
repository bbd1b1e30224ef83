"""The sort family's floor grid: every cell timed as the merge sort alone (forced), as the radix
sort alone (forced, where it can run), as dispatched (tuning/radix.h's thresholds), and as the
fastest XLA spelling of the same call, in one process on one device, alternating, the median of
`--rounds` rounds (user-visible: back-to-back jitted calls, blocked once a round).

    python -m perf.sort_grid [--quick] [--rounds 5] [--json PATH] [--only SUBSTRING ...] [--kernel]
    python -m perf.sort_grid --recheck GRID.json [--runs 5] [--json PATH]

--recheck measures again, in --runs separate runs (fresh inputs of another seed, every variant
compiled afresh, in the same alternating rounds), each cell of an earlier grid that was below
the floor (FLOOR x the XLA spelling's time as dispatched), and gives a cell the median of its
runs' ratios (each run alternates the variants): the median over several runs for cells whose
single runs move by more than the floor's margin.

Cells: 1-D sort / argsort of 11 key dtypes at 2^12, 2^16, 2^18, 2^19, 2^20 and 2^24 keys,
sort_by_key with a float32 payload, 2^27 32-bit keys, presorted keys, rows (4096 x 256,
256 x 65536, 2^16 x 64) of 7 key dtypes, and rows of 2048, 8192 and 16384 int16 / float16 keys
(around tuning/radix.h kSegmentedRadixMinLength). The XLA spellings: sort `jnp.sort`; argsort
`lax.sort((x, iota int32), num_keys=1)` (then `astype(int64)` where ours returns int64, x64 on);
sort_by_key `lax.sort((k, v), num_keys=1)`. Each cell first checks that the forced merge and
radix sorts agree bit for bit. On the CPU (which ignores the method) "merge" is the CPU sort as
dispatched: its merge sort, or its integer radix path (tuning/cpu.h cpu_sort_takes_radix). Prints a
line a cell (with --kernel also each variant's kernel time from a profiler trace and its largest
events) and writes the JSON from which docs/performance.md's radix table and tuning/radix.h's
thresholds come (perf/README.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jax_mergepath as jmp
from jax_mergepath import _cpu, _ffi
from perf.bench.trace import traced

FLOOR = 0.97  # the speed floor: as dispatched at least this x the fastest XLA spelling

DTYPES_1D = ["bool", "int8", "uint8", "int16", "float16", "bfloat16", "int32", "uint32",
             "float32", "int64", "float64"]  # fmt: skip
DTYPES_ROWS = ["int8", "int16", "float16", "int32", "float32", "int64", "float64"]
SIZES_1D = [12, 16, 18, 19, 20, 24]
ROWS = [(4096, 256), (256, 65536), (65536, 64)]
# rows of 2-byte keys around tuning/radix.h kSegmentedRadixMinLength (CUB's segmented sort)
ROWS_2BYTE = [(8192, 2048), (2048, 8192), (1024, 16384)]


@dataclass
class Cell:
    name: str
    op: str  # sort, argsort, sort_by_key
    dtype: str
    shape: tuple[int, ...]
    presorted: bool = False
    times: dict[str, float] = field(default_factory=dict)  # variant -> seconds a call (median)
    radix_possible: bool = False
    dispatched: str = "merge"
    agree: bool | None = None
    kernel: dict[str, float] = field(default_factory=dict)  # variant -> busy seconds a call
    events: dict[str, dict[str, float]] = field(default_factory=dict)  # its largest events


def cpu_cells() -> list[Cell]:
    """The CPU floor's cells: 10 key dtypes at 2^16 and 2^20 keys and rows of 4096 x 256."""
    out = []
    for dtype in [d for d in DTYPES_1D if d != "bool"]:
        for shape in ((2**16,), (2**20,), (4096, 256)):
            for op in ("sort", "argsort"):
                size = f"2^{shape[0].bit_length() - 1}" if len(shape) == 1 else "4096x256"
                out.append(Cell(f"{op} {dtype} {size}", op, dtype, shape))
    return out


def cells(quick: bool) -> list[Cell]:
    out = []
    sizes = [12, 20] if quick else SIZES_1D
    for dtype in DTYPES_1D:
        for log2 in sizes:
            for op in ("sort", "argsort"):
                out.append(Cell(f"{op} {dtype} 2^{log2}", op, dtype, (2**log2,)))
    for dtype in ["int32", "float32", "int64", "float16"]:
        for log2 in sizes:
            out.append(Cell(f"sort_by_key {dtype}+f32 2^{log2}", "sort_by_key", dtype, (2**log2,)))
    if not quick:
        for dtype in ["int32", "float32"]:
            for op in ("sort", "argsort"):
                out.append(Cell(f"{op} {dtype} 2^27", op, dtype, (2**27,)))
            for log2 in (24, 27):
                out.append(Cell(f"sort {dtype} 2^{log2} presorted", "sort", dtype, (2**log2,),
                                presorted=True))
    for rows, length in ROWS[:1] if quick else ROWS:
        for dtype in DTYPES_ROWS:
            for op in ("sort", "argsort"):
                out.append(Cell(f"{op} {dtype} {rows}x{length}", op, dtype, (rows, length)))
    for rows, length in [] if quick else ROWS_2BYTE:
        for dtype in ("int16", "float16"):
            for op in ("sort", "argsort"):
                out.append(Cell(f"{op} {dtype} {rows}x{length}", op, dtype, (rows, length)))
    return out


def keys_for(cell: Cell, seed: int) -> jax.Array:
    key = jax.random.key(seed)
    dtype = jnp.dtype(cell.dtype)
    if dtype == jnp.bool_:
        x = jax.random.bernoulli(key, 0.5, cell.shape)
    elif jnp.issubdtype(dtype, jnp.unsignedinteger):  # (every bit random; randint's bounds
        x = jax.random.bits(key, cell.shape, dtype)     # overflow for uint64)
    elif jnp.issubdtype(dtype, jnp.integer):
        info = jnp.iinfo(dtype)
        x = jax.random.randint(key, cell.shape, info.min, info.max, dtype=dtype)
    else:
        x = jax.random.normal(key, cell.shape, jnp.float32).astype(dtype)
    if cell.presorted:
        x = jnp.sort(x, axis=-1)
    return jax.block_until_ready(x)


def xla_fn(cell: Cell) -> Callable:
    if cell.op == "sort":
        return lambda x: jnp.sort(x, axis=-1)
    if cell.op == "argsort":
        def argsort(x):
            iota = lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
            return lax.sort((x, iota), dimension=x.ndim - 1, num_keys=1)[1].astype(jnp.int64)
        return argsort
    return lambda k, v: lax.sort((k, v), num_keys=1)


def ours_fn(cell: Cell) -> Callable:
    if cell.op == "sort":
        return lambda x: jmp.sort(x, axis=-1)
    if cell.op == "argsort":
        return lambda x: jmp.argsort(x, axis=-1)
    return lambda k, v: jmp.sort_by_key(k, v)


def compiled(fn: Callable, args: tuple, method: str | None) -> Callable:
    """fn jitted afresh (under `method` for ours) and run once."""
    if method is None:
        f = jax.jit(lambda *a: fn(*a))
    else:
        with _ffi.forced_sort_method(method):
            f = jax.jit(lambda *a: fn(*a))
            f = f.lower(*args).compile()
    jax.block_until_ready(f(*args))
    return f


def per_call(f: Callable, args: tuple, calls: int) -> float:
    t0 = time.perf_counter()
    out = None
    for _ in range(calls):
        out = f(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - t0) / calls


@dataclass(eq=False)
class _Traced:  # what perf.bench.trace.traced runs
    f: Callable
    args: tuple
    est_s: float = 0.0


def kernel_busy(f: Callable, args: tuple, repeats: int = 5) -> tuple[float, dict[str, float]]:
    """f's kernel busy seconds a call and its six largest kernels' (name -> seconds a call), from
    a profiler trace of `repeats` blocked calls ((0, {}) where no trace came)."""
    found = traced([_Traced(f, args)], repeats, jax.devices()[0].platform, set(), all_events=True)
    if None not in found:
        return 0.0, {}
    busy, names = found[None]
    top = sorted(names.items(), key=lambda kv: -kv[1])[:6]
    return busy / repeats / 1e9, {name: ns / repeats / 1e9 for name, ns in top}


def kernel_times(cell: Cell, variants: dict[str, Callable], args: tuple) -> None:
    for k, f in variants.items():
        busy, top = kernel_busy(f, args)
        if top:
            cell.kernel[k], cell.events[k] = busy, top


def run_cell(cell: Cell, rounds: int, target_s: float, kernel: bool = False,
             seed: int = 1) -> None:
    x = keys_for(cell, seed)
    args: tuple = (x,)
    if cell.op == "sort_by_key":
        args = (x, jax.random.normal(jax.random.key(2), cell.shape, jnp.float32))
    rows = int(np.prod(cell.shape[:-1], dtype=np.int64)) if len(cell.shape) > 1 else 1
    payload_bytes = 0 if cell.op == "sort" else 4
    key_bytes = jnp.dtype(cell.dtype).itemsize
    integer_keys = jnp.dtype(cell.dtype).kind in "biu"
    cell.radix_possible = bool(_cpu.sort_takes_radix(2, key_bytes, payload_bytes, rows,
                                                     cell.shape[-1], integer_keys))
    auto_radix = bool(_cpu.sort_takes_radix(0, key_bytes, payload_bytes, rows, cell.shape[-1],
                                            integer_keys))
    cell.dispatched = "radix" if auto_radix else "merge"
    variants = {"xla": compiled(xla_fn(cell), args, None),
                "merge": compiled(ours_fn(cell), args, "merge")}
    if jax.devices()[0].platform != "gpu":  # (the CPU has one sort: the method is the GPU's)
        cell.radix_possible, cell.dispatched = False, "merge"
    if cell.radix_possible:
        variants["radix"] = compiled(ours_fn(cell), args, "radix")
        got = jax.tree.leaves(jax.device_get(variants["radix"](*args)))
        want = jax.tree.leaves(jax.device_get(variants["merge"](*args)))
        cell.agree = all(
            np.array_equal(np.asarray(g).view(np.uint8), np.asarray(w).view(np.uint8))
            for g, w in zip(got, want, strict=True)
        )
    calls = {k: max(3, min(500, int(target_s / max(per_call(f, args, 2), 1e-6))))
             for k, f in variants.items()}
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for k, f in variants.items():
            samples[k].append(per_call(f, args, calls[k]))
    cell.times = {k: statistics.median(v) for k, v in samples.items()}
    cell.times["auto"] = cell.times[cell.dispatched]
    if kernel:
        kernel_times(cell, variants, args)


def line(cell: Cell) -> str:
    t = cell.times
    us = {k: f"{v * 1e6:10.1f}" for k, v in t.items()}
    radix = us.get("radix", " " * 10)
    ratio = t["xla"] / t["auto"]
    merge_ratio = t["xla"] / t["merge"]
    flag = "" if cell.agree in (None, True) else "  MISMATCH merge/radix"
    text = (f"{cell.name:34s} xla {us['xla']} merge {us['merge']} radix {radix} "
            f"auto {us['auto']} ({cell.dispatched:5s})  xla/auto {ratio:5.2f}x  "
            f"xla/merge {merge_ratio:5.2f}x{flag}")
    for k, busy in cell.kernel.items():
        top = ", ".join(f"{name[:40]} {s * 1e6:.1f}" for name, s in cell.events[k].items())
        text += f"\n    kernel {k}: {busy * 1e6:.1f} us ({top})"
    return text


def recheck(path: str, runs: int, rounds: int, target_s: float, out: str) -> None:
    """The cells of the grid in `path` below the floor, each measured in `runs` more runs."""
    with open(path) as f:
        earlier = json.load(f)["cells"]
    below = [c for c in earlier if c["times"]["xla"] / c["times"]["auto"] < FLOOR]
    found = []
    for old in below:
        times: dict[str, list[float]] = {}
        for run in range(runs):
            cell = Cell(old["name"], old["op"], old["dtype"], tuple(old["shape"]),
                        old["presorted"])
            run_cell(cell, rounds, target_s, seed=2 + run)
            for k, v in cell.times.items():
                times.setdefault(k, []).append(v)
        ratios = [x / a for x, a in zip(times["xla"], times["auto"], strict=True)]
        found.append({"name": old["name"], "earlier": old["times"], "runs": times,
                      "dispatched": cell.dispatched, "ratio": statistics.median(ratios)})
        print(f"{old['name']:34s} earlier {old['times']['xla'] / old['times']['auto']:.2f}x; "
              f"runs " + " ".join(f"{r:.2f}x" for r in ratios) +
              f"; median {statistics.median(ratios):.2f}x", flush=True)
        if out:
            with open(out, "w") as f:
                json.dump({"device": jax.devices()[0].device_kind, "runs": runs,
                           "rounds": rounds, "cells": found}, f, indent=1)
    still = [c for c in found if c["ratio"] < FLOOR]
    print(f"{len(found)} cells below {FLOOR}x rechecked in {runs} runs; median of the runs' "
          f"xla/auto still below: {len(still)} ({', '.join(c['name'] for c in still)})",
          flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a few cells (a smoke run)")
    p.add_argument("--cpu-cells", action="store_true", help="the CPU floor's cells instead")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--target-ms", type=float, default=20.0, help="time a variant a round")
    p.add_argument("--json", default="", help="write the cells here")
    p.add_argument("--only", action="append", default=[],
                   help="cells whose name contains this (repeatable: any of them)")
    p.add_argument("--kernel", action="store_true", help="kernel times from a profiler trace")
    p.add_argument("--recheck", default="", help="a grid's JSON: its cells below the floor")
    p.add_argument("--runs", type=int, default=5, help="runs a rechecked cell")
    a = p.parse_args()
    jax.config.update("jax_enable_x64", True)
    if a.recheck:
        recheck(a.recheck, a.runs, a.rounds, a.target_ms / 1e3, a.json)
        return
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, x64 on, "
          f"median of {a.rounds} alternating rounds, user-visible us a call", flush=True)
    every = cpu_cells() if a.cpu_cells else cells(a.quick)
    todo = [c for c in every if not a.only or any(o in c.name for o in a.only)]

    def save(done: list[Cell]) -> None:
        if a.json:  # after every cell: a run cut short keeps what it measured
            with open(a.json, "w") as f:
                json.dump({"device": dev.device_kind, "jax": jax.__version__,
                           "rounds": a.rounds, "cells": [asdict(c) for c in done]}, f, indent=1)

    for i, cell in enumerate(todo):
        run_cell(cell, a.rounds, a.target_ms / 1e3, a.kernel)
        print(line(cell), flush=True)
        save(todo[: i + 1])
    slower = [c for c in todo if c.times["auto"] > c.times["xla"]]
    ratios = [c.times["xla"] / c.times["auto"] for c in todo]
    print(f"{len(todo)} cells; dispatched slower than XLA: {len(slower)}; median xla/auto "
          f"{statistics.median(ratios):.2f}x; worst {min(ratios):.2f}x", flush=True)


if __name__ == "__main__":
    main()
