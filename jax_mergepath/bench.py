"""Benchmark of jax_mergepath against what JAX users write today, family by family.

    python -m jax_mergepath.bench [--family merge|sort|all] [--quick] [--cub PATH] [--json FILE]

Every case first checks its result on fresh random data against each baseline (integers
bit-equal; floats equal as values, any NaN equal to any NaN; argsort indices exactly), then
times every variant two ways, in the same run on the same device:

  user-visible: wall time per call of --calls back-to-back calls of the jitted function, blocked
      once at the end (launches, gaps, extra kernels and host work included), the median of
      --rounds such batches. GB/s, "% copy" and speedups are headlined with this time.
  kernel: busy time of the variant's own XLA operations in a profiler trace of --repeats
      blocked calls, per call: on a GPU its kernels and copies on the device's streams, on the
      CPU its XLA thunks on host threads (the union of their intervals, matched to the variant
      by the trace's hlo_module stat).

Bytes: every input read once, every output written once. "% copy" compares with a copy measured
in the same run: cudaMemcpy device to device (through CuPy) on a GPU, numpy's copyto on the CPU
(the header says which). Speedups are baseline time / our time (> 1: we are faster).

Baselines are JAX idioms: jnp.sort(concatenate) and a searchsorted + scatter merge, lax.sort,
jnp.sort, jnp.argsort(stable=True), jnp.searchsorted (each method). References, same device,
not baselines: torch.sort (when torch imports), numpy's stable sorts (CPU), CUB (--cub, GPU).
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jax_mergepath as jmp

# Default sizes (log2) by device; --max-log2 caps them all, --quick trims them.
GPU_SIZES = {
    "max": 27, "sort": (20, 24, 27), "sort_by_key": 24, "lax_sort": 24, "rows": 26,
    "search": 23, "memory": 27,
}
CPU_SIZES = {
    "max": 22, "sort": (16, 20), "sort_by_key": 22, "lax_sort": 20, "rows": 20,
    "search": 20, "memory": 20,
}
GPU_TIMING = {"repeats": 10, "rounds": 3, "min_calls": 5, "max_batch_s": 0.3}
CPU_TIMING = {"repeats": 2, "rounds": 1, "min_calls": 2, "max_batch_s": 0.3}
ROW_WIDTHS = (64, 512, 4096)


def say(*parts: Any) -> None:
    print(*parts, flush=True)


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------


@dataclass
class Cfg:
    platform: str  # "gpu" or "cpu"
    repeats: int
    calls: int
    min_calls: int
    rounds: int
    max_batch_s: float
    breakdown: bool = False
    copy_bps: float = 0.0
    torch: Any = None  # the torch module when used as a reference, else None
    torch_device: str = "cpu"
    search_compile_timeout: float = 60.0


@dataclass(eq=False)  # compared by identity (its args are arrays)
class Variant:
    """One way to compute a case's result; kind "jax" (jitted), "numpy" or "torch"."""

    label: str
    fn: Callable
    args: tuple
    kind: str = "jax"
    check: Callable | None = None  # (ours_out, this_out) -> mismatch text or None
    compile_timeout: float | None = None
    # filled while running
    f: Callable | None = None
    tag: str = ""
    est_s: float = 0.0
    first_s: float = 0.0
    kernel_s: float | None = None
    user_s: float | None = None
    calls: int = 0
    error: str | None = None
    breakdown: dict = field(default_factory=dict)
    kernel_method: str = ""


_TAGS = itertools.count()


def _named_jit(fn: Callable) -> tuple[Callable, str]:
    """jax.jit of fn under a unique name: the trace's hlo_module stat is "jit_" + that name."""
    tag = f"jmpbench{next(_TAGS)}"

    def variant(*args):
        return fn(*args)

    variant.__name__ = variant.__qualname__ = tag
    return jax.jit(variant), tag


def _union_ns(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, -float("inf")
    for s, e in sorted(intervals):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def _parse_trace(path: str, platform: str, modules: set[str], all_events: bool = False):
    """Per module: (busy ns, {event name: ns}) of the device's (GPU) or host's (CPU) XLA events.
    all_events: every GPU stream event counts, under the key None (one-variant traces)."""
    data = jax.profiler.ProfileData.from_file(path)
    with warnings.catch_warnings():  # jax 0.11: "builtin type event_stats has no __module__"
        warnings.simplefilter("ignore", DeprecationWarning)
        return _collect(data, platform, modules, all_events)


def _collect(data: Any, platform: str, modules: set[str], all_events: bool) -> dict:
    plane_name = "/device:GPU:0" if platform == "gpu" else "/host:CPU"
    intervals: dict = defaultdict(list)
    names: dict = defaultdict(lambda: defaultdict(float))
    for plane in data.planes:
        if plane.name != plane_name:
            continue
        for line in plane.lines:
            if platform == "gpu" and not line.name.startswith("Stream"):
                continue
            for ev in line.events:
                if all_events:
                    mod = None
                else:
                    mod = next((v for k, v in ev.stats if k == "hlo_module"), None)
                    if mod not in modules:
                        continue
                intervals[mod].append((ev.start_ns, ev.start_ns + ev.duration_ns))
                names[mod][ev.name] += ev.duration_ns
    return {m: (_union_ns(iv), dict(names[m])) for m, iv in intervals.items()}


def _traced(variants: list[Variant], repeats: int, platform: str, modules: set[str],
            all_events: bool = False) -> dict:
    """Runs each variant `repeats` times (blocked) under one profiler trace, sets est_s (host
    time per blocked call) and returns _parse_trace's result ({} without a trace file)."""
    with tempfile.TemporaryDirectory(prefix="jmpbench") as tmp:
        jax.profiler.start_trace(tmp)
        try:
            for v in variants:
                t0 = time.perf_counter()
                for _ in range(repeats):
                    jax.block_until_ready(v.f(*v.args))
                v.est_s = (time.perf_counter() - t0) / repeats
        finally:
            jax.profiler.stop_trace()
        paths = glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True)
        return _parse_trace(paths[0], platform, modules, all_events) if paths else {}


def kernel_times(variants: list[Variant], cfg: Cfg) -> None:
    """Sets kernel_s (and breakdown, est_s) of warm jax variants from one profiler trace; a
    variant the trace does not name (no hlo_module stats) gets a trace of its own (GPU: every
    stream event) or, on the CPU, the median of blocked calls."""
    if not variants:
        return
    found = _traced(variants, cfg.repeats, cfg.platform, {"jit_" + v.tag for v in variants})
    for v in variants:
        hit = found.get("jit_" + v.tag)
        if hit:
            v.kernel_s = hit[0] / cfg.repeats / 1e9
            v.breakdown = {k: ns / cfg.repeats / 1e9 for k, ns in hit[1].items()}
            v.kernel_method = "trace"
            continue
        if cfg.platform == "gpu":
            alone = _traced([v], cfg.repeats, "gpu", set(), all_events=True)
            if None in alone:
                v.kernel_s = alone[None][0] / cfg.repeats / 1e9
                v.breakdown = {k: ns / cfg.repeats / 1e9 for k, ns in alone[None][1].items()}
                v.kernel_method = "trace, all stream events (no hlo_module stats)"
                continue
        samples = []
        for _ in range(max(cfg.repeats, 1)):
            t0 = time.perf_counter()
            jax.block_until_ready(v.f(*v.args))
            samples.append(time.perf_counter() - t0)
        v.kernel_s = statistics.median(samples)
        v.kernel_method = "median of blocked calls (no trace events)"
        v.breakdown = {v.kernel_method: v.kernel_s}
        if not _WARNED:
            _WARNED.append(v.label)
            say(f"  warning: no trace events for {v.label}: kernel time = {v.kernel_method}")


_WARNED: list = []


def _batch_calls(est_s: float, cfg: Cfg) -> int:
    return max(cfg.min_calls, min(cfg.calls, int(cfg.max_batch_s / max(est_s, 1e-7))))


def user_time(v: Variant, cfg: Cfg) -> None:
    """Sets user_s: wall time per call of back-to-back calls, blocked once per batch."""
    n = _batch_calls(v.est_s, cfg)
    samples = []
    for _ in range(cfg.rounds):
        if v.kind == "jax":
            outs: list = []
            t0 = time.perf_counter()
            for _ in range(n):
                out = v.f(*v.args)
                # One GPU stream runs the calls in order: block on the last. The CPU client may
                # overlap independent calls: block on all of them.
                outs = [out] if cfg.platform == "gpu" else [*outs, out]
            jax.block_until_ready(outs)
        elif v.kind == "torch":
            t0 = time.perf_counter()
            for _ in range(n):
                out = v.f(*v.args)
            _torch_sync(cfg)
        else:
            t0 = time.perf_counter()
            for _ in range(n):
                out = v.f(*v.args)
        samples.append((time.perf_counter() - t0) / n)
        del out
    v.user_s, v.calls = statistics.median(samples), n


def _torch_sync(cfg: Cfg) -> None:
    if cfg.torch is not None and cfg.torch_device == "cuda":
        cfg.torch.cuda.synchronize()


def host_kernel_time(v: Variant, cfg: Cfg) -> None:
    """numpy / torch references: 'kernel' time is CUDA events around one call (torch on a GPU)
    or the median of single calls (host)."""
    samples = []
    for _ in range(max(cfg.repeats, 1)):
        if v.kind == "torch" and cfg.torch_device == "cuda":
            torch = cfg.torch
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            v.f(*v.args)
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop) / 1e3)
        else:
            t0 = time.perf_counter()
            v.f(*v.args)
            _torch_sync(cfg)
            samples.append(time.perf_counter() - t0)
    v.kernel_s = statistics.median(samples)
    v.est_s = v.kernel_s
    v.kernel_method = ("CUDA events around one call" if v.kind == "torch"
                       and cfg.torch_device == "cuda" else "median of single calls")


def first_call(v: Variant) -> Any:
    """Compiles (jax) and runs v once; returns its output, or None with v.error set. A compile
    slower than v.compile_timeout is abandoned (its thread finishes in the background)."""
    box: dict = {}

    def work():
        try:
            t0 = time.perf_counter()
            out = v.f(*v.args)
            if v.kind == "jax":
                jax.block_until_ready(out)
            box["out"], box["s"] = out, time.perf_counter() - t0
        except Exception as err:  # noqa: BLE001 - reported in the row, the run goes on
            box["err"] = err

    if v.compile_timeout is None:
        work()
    else:
        th = threading.Thread(target=work, daemon=True)
        th.start()
        th.join(v.compile_timeout)
        if th.is_alive():
            v.error = f"skipped: compile + first call > {v.compile_timeout:.0f} s"
            return None
    if "err" in box:
        v.error = f"failed: {type(box['err']).__name__}: {str(box['err']).splitlines()[0][:160]}"
        return None
    v.first_s = box["s"]
    return box["out"]


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------


def _leaves(x: Any) -> list:
    if isinstance(x, list | tuple):
        return [leaf for item in x for leaf in _leaves(item)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _leaves(x[k])]
    return [x]


def _to_jax(x: Any) -> Any:
    if isinstance(x, jax.Array | np.ndarray):
        return x
    return jnp.from_dlpack(x.contiguous())  # a torch tensor: same device, no copy


def same_values(a: Any, b: Any) -> bool:
    """Equal shapes and values; any NaN equals any NaN (integers: bit-equal)."""
    a, b = _to_jax(a), _to_jax(b)
    if a.shape != b.shape:
        return False
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    return bool(jnp.array_equal(a, b, equal_nan=True))


def check_all(ours: Any, other: Any) -> str | None:
    la, lb = _leaves(ours), _leaves(other)
    if len(la) != len(lb):
        return f"{len(la)} outputs vs {len(lb)}"
    for i, (a, b) in enumerate(zip(la, lb, strict=True)):
        if not same_values(a, b):
            return f"output {i} differs"
    return None


def check_first(k: int) -> Callable:
    """Compares the first k outputs only (an unstable baseline's payload may differ on ties)."""

    def check(ours: Any, other: Any) -> str | None:
        return check_all(_leaves(ours)[:k], _leaves(other)[:k])

    return check


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Case:
    family: str
    name: str
    n: int
    nbytes: int
    ours: list[Variant]
    baselines: list[Variant]
    refs: list[Variant] = field(default_factory=list)
    cub: list[str] = field(default_factory=list)  # CUB case names (at size n) to compare with
    pre_check: Callable | None = None  # extra check (e.g. NaN data): () -> mismatch text or None
    notes: list[str] = field(default_factory=list)


def _fmt_t(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def run_case(case: Case, cfg: Cfg, cub: dict, rows: list) -> None:
    jax_variants = [v for v in case.ours + case.baselines if v.kind == "jax"]
    for v in jax_variants:
        v.f, v.tag = _named_jit(v.fn)
    problems = []
    if case.pre_check is not None:
        msg = case.pre_check()
        if msg:
            problems.append(msg)
    outs = {}
    for v in case.ours + case.baselines:
        out = first_call(v)
        if v.error and v in case.ours:
            problems.append(f"{v.label} {v.error}")
        outs[id(v)] = out
    for o in case.ours:
        if o.error:
            continue
        for b in case.baselines:
            if b.error:
                continue
            msg = (b.check or check_all)(outs[id(o)], outs[id(b)])
            if msg:
                problems.append(f"{o.label} vs {b.label}: {msg}")
    ours_out = outs.get(id(case.ours[0]))
    outs.clear()
    if problems:
        say(f"{case.name:<46} CHECK FAILED (not timed): " + "; ".join(problems))
        rows.append({"family": case.family, "case": case.name, "n": case.n,
                     "status": "CHECK FAILED: " + "; ".join(problems)})
        return
    for r in case.refs:  # references: checked against ours, timed only when they agree
        if r.error:
            continue
        r.f = r.fn
        out = first_call(r)
        if r.error is None and ours_out is not None:
            msg = (r.check or check_all)(ours_out, out)
            if msg:
                r.error = f"mismatch ({msg}): not timed"
        del out
    del ours_out
    live = [v for v in jax_variants if v.error is None]
    kernel_times(live, cfg)
    for v in live:
        user_time(v, cfg)
    for r in case.refs:
        if r.error is None:
            host_kernel_time(r, cfg)
            user_time(r, cfg)
    for o in case.ours:
        rows.append(_row(case, o, cfg, cub))
        _print_row(rows[-1], cfg, o)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _row(case: Case, o: Variant, cfg: Cfg, cub: dict) -> dict:
    label = f" {o.label}" if len(case.ours) > 1 else ""
    row = {
        "family": case.family,
        "case": case.name + label,
        "n": case.n,
        "bytes": case.nbytes,
        "ours": o.label,
        "user_s": o.user_s,
        "kernel_s": o.kernel_s,
        "kernel_method": o.kernel_method,
        "calls": o.calls,
        "first_call_s": o.first_s,
        "gbps": case.nbytes / o.user_s / 1e9,
        "gbps_kernel": case.nbytes / o.kernel_s / 1e9,
        "pct_copy": 100 * case.nbytes / o.user_s / cfg.copy_bps if cfg.copy_bps else None,
        "pct_copy_kernel": (
            100 * case.nbytes / o.kernel_s / cfg.copy_bps if cfg.copy_bps else None
        ),
        "baselines": [],
        "references": [],
        "cub": [],
        "notes": list(case.notes),
        "status": "ok",
    }
    for b in case.baselines:
        row["baselines"].append({
            "name": b.label, "user_s": b.user_s, "kernel_s": b.kernel_s, "calls": b.calls,
            "kernel_method": b.kernel_method,
            "speedup": _ratio(b.user_s, o.user_s), "speedup_kernel": _ratio(b.kernel_s,
                                                                             o.kernel_s),
            "first_call_s": b.first_s, "error": b.error,
        })
    timed = [b for b in row["baselines"] if b["speedup"]]
    best = min(timed, key=lambda b: b["user_s"]) if timed else None
    row["best_baseline"] = best["name"] if best else None
    row["speedup_best"] = best["speedup"] if best else None
    row["speedup_best_kernel"] = best["speedup_kernel"] if best else None
    for r in case.refs:
        row["references"].append({
            "name": r.label, "user_s": r.user_s, "kernel_s": r.kernel_s, "calls": r.calls,
            "speedup": _ratio(r.user_s, o.user_s), "speedup_kernel": _ratio(r.kernel_s,
                                                                             o.kernel_s),
            "error": r.error,
        })
    for name in case.cub:
        us = cub.get((name, case.n))
        if us is not None:
            row["cub"].append({"name": name, "us": us, "speedup": us * 1e-6 / o.user_s,
                               "speedup_kernel": us * 1e-6 / o.kernel_s})
    return row


def _gbps(g: float) -> str:
    return f"{g:.0f}" if g >= 100 else f"{g:.1f}" if g >= 1 else f"{g:.3f}"


def _pct(p: float | None) -> str:
    return "-" if p is None else f"{p:.1f}%"


def _x(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s:.3g}x" if s < 0.1 else f"{s:.2f}x" if s < 10 else f"{s:.1f}x"


HEADER = (f"{'case':<46} {'user/call':>10} {'kernel':>10} {'GB/s':>7} {'%copy user':>10} "
          f"{'(kernel)':>9}  speedup user (kernel) vs baseline")


def _print_row(row: dict, cfg: Cfg, o: Variant) -> None:
    parts = []
    for b in row["baselines"]:
        if b["error"]:
            parts.append(f"{b['name']}: {b['error']}")
        else:
            parts.append(f"{_x(b['speedup'])} ({_x(b['speedup_kernel'])}) {b['name']}")
    say(f"{row['case']:<46} {_fmt_t(row['user_s']):>10} {_fmt_t(row['kernel_s']):>10} "
        f"{_gbps(row['gbps']):>7} {_pct(row['pct_copy']):>10} ({_pct(row['pct_copy_kernel']):>6})  "
        + " | ".join(parts))
    extra = []
    for r in row["references"]:
        if r["error"]:
            extra.append(f"{r['name']}: {r['error']}")
        else:
            extra.append(f"{_x(r['speedup'])} ({_x(r['speedup_kernel'])}) {r['name']} "
                         f"[{_fmt_t(r['user_s'])}]")
    for c in row["cub"]:
        extra.append(f"{_x(c['speedup'])} ({_x(c['speedup_kernel'])}) CUB {c['name']} "
                     f"[{c['us']:.1f} us]")
    if extra:
        say(f"{'':<48}refs: " + " | ".join(extra))
    for note in row["notes"]:
        say(f"{'':<48}note: {note}")
    if cfg.breakdown:
        for name, s in sorted(o.breakdown.items(), key=lambda kv: -kv[1]):
            say(f"{'':<48}{s * 1e6:10.1f} us  {name[:90]}")


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def random_keys(key: jax.Array, n: int | tuple, dtype) -> jax.Array:
    """Random keys over the dtype's whole range (ints) or standard normal (floats)."""
    shape = (n,) if isinstance(n, int) else n
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.floating):
        return jax.random.normal(key, shape, dtype)
    bits = jax.random.bits(key, shape, np.dtype(f"uint{8 * dtype.itemsize}"))
    return lax.bitcast_convert_type(bits, dtype)


def sorted_keys(key: jax.Array, n: int, dtype) -> jax.Array:
    if jnp.issubdtype(dtype, jnp.floating):
        x = jax.random.normal(key, (n,), dtype)
    else:
        info = jnp.iinfo(dtype)
        x = jax.random.randint(key, (n,), info.min // 2, info.max // 2, dtype)
    return jnp.sort(x)


def _key(*parts: int) -> jax.Array:
    return jax.random.key(hash(parts) & 0x7FFFFFFF)


def _x64_ok(dtype) -> bool:
    return np.dtype(dtype).itemsize < 8 or bool(jax.config.jax_enable_x64)


def _dname(dtype) -> str:
    return np.dtype(dtype).name


def jnp_argsort_stable(x: jax.Array) -> jax.Array:
    """jnp.argsort(x, stable=True) with int32 indices (its default without jax_enable_x64)."""
    try:
        return jnp.argsort(x, stable=True, dtype=jnp.int32)
    except TypeError:  # an older jnp.argsort without dtype=
        iota = lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
        return lax.sort_key_val(x, iota, is_stable=True)[1]


# ---------------------------------------------------------------------------------------------
# Merge family (the original cases)
# ---------------------------------------------------------------------------------------------


def searchsorted_merge(a: jax.Array, b: jax.Array) -> jax.Array:
    pos_a = jnp.arange(a.shape[0]) + jnp.searchsorted(b, a, side="left")
    pos_b = jnp.arange(b.shape[0]) + jnp.searchsorted(a, b, side="right")
    out = jnp.empty(a.shape[0] + b.shape[0], a.dtype)
    return out.at[pos_a].set(a, unique_indices=True).at[pos_b].set(b, unique_indices=True)


def concat_sort(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.sort(jnp.concatenate([a, b]))


def concat_sort_pairs(a, b, va, vb):
    return lax.sort((jnp.concatenate([a, b]), jnp.concatenate([va, vb])), num_keys=1)


def merge_case(dtype, total: int, frac_a: float, pairs: bool, cub_merge_n: int) -> Case:
    m = max(1, int(total * frac_a))
    n = total - m
    ka, kb = jax.random.split(_key(total, int(frac_a * 1000), np.dtype(dtype).num))
    a, b = sorted_keys(ka, m, dtype), sorted_keys(kb, n, dtype)
    itemsize = np.dtype(dtype).itemsize
    lg = total.bit_length() - 1
    if pairs:
        va = jax.random.randint(_key(total, 1), (m,), 0, 2**31 - 1, jnp.int32)
        vb = jax.random.randint(_key(total, 2), (n,), 0, 2**31 - 1, jnp.int32)
        args = (a, b, va, vb)
        return Case(
            "merge", f"merge kv {_dname(dtype)} 2^{lg} a={frac_a:.0%}", total,
            2 * total * (itemsize + 4),
            [Variant("jmp.merge_by_key", jmp.merge_by_key, args)],
            [Variant("lax.sort(concat, num_keys=1)", concat_sort_pairs, args)],
        )
    args = (a, b)
    cub = []
    if frac_a == 0.5 and total == cub_merge_n and _dname(dtype) in ("int32", "float32"):
        cub = [f"merge_keys_{_dname(dtype)}"]
    return Case(
        "merge", f"merge {_dname(dtype)} 2^{lg} a={frac_a:.0%}", total, 2 * total * itemsize,
        [Variant("jmp.merge", jmp.merge, args)],
        [Variant("jnp.sort(concat)", concat_sort, args),
         Variant("searchsorted+scatter", searchsorted_merge, args)],
        cub=cub,
    )


def merge_cases(sizes: list[int], quick: bool, cub_merge_n: int) -> list[Callable[[], Case]]:
    dtypes = [jnp.int32] if quick else [jnp.int32, jnp.float32, jnp.int64]
    cases = []
    for log2 in sizes:
        for dtype in dtypes:
            if not _x64_ok(dtype):
                continue
            for frac in (0.5, 0.01):
                cases.append(lambda d=dtype, t=1 << log2, f=frac: merge_case(
                    d, t, f, False, cub_merge_n))
        cases.append(lambda t=1 << log2: merge_case(jnp.int32, t, 0.5, True, cub_merge_n))
    return cases


# ---------------------------------------------------------------------------------------------
# Sort family
# ---------------------------------------------------------------------------------------------


def _torch_ref(cfg: Cfg, label: str, fn: Callable, *arrays: jax.Array, check=None) -> list:
    """A torch reference on the same device (the JAX arrays shared through DLPack)."""
    if cfg.torch is None:
        return []
    try:
        targs = tuple(cfg.torch.from_dlpack(a) for a in arrays)
    except Exception as err:  # noqa: BLE001 - a reference only
        return [Variant(label, fn, (), kind="torch", error=f"no DLPack: {err}")]
    return [Variant(label, fn, targs, kind="torch", check=check)]


def _numpy_ref(cfg: Cfg, label: str, fn: Callable, *arrays: jax.Array, check=None) -> list:
    if cfg.platform != "cpu":
        return []
    return [Variant(label, fn, tuple(np.asarray(a) for a in arrays), kind="numpy", check=check)]


def _nan_pre_check(dtype, argsort: bool) -> Callable:
    """Sort values on small data with NaNs, -0.0 and +0.0 against jnp.sort (values, NaN-equal);
    argsort indices against jnp.argsort on NaN-free data with ties (exact)."""

    def pre_check() -> str | None:
        n = 1 << 16
        x = np.array(jax.random.normal(_key(n, 7), (n,), dtype))
        x[::97] = np.nan
        x[5::89] = 0.0
        x[7::83] = -0.0
        if not same_values(jmp.sort(x), jnp.sort(x)):
            return "sort with NaN / signed zeros differs from jnp.sort"
        if argsort:
            y = np.round(np.array(jax.random.normal(_key(n, 8), (n,), dtype)) * 8)
            if not same_values(jmp.argsort(y), jnp_argsort_stable(y)):
                return "argsort with ties differs from jnp.argsort(stable=True)"
        return None

    return pre_check


def sort_case(dtype, log2: int, argsort: bool, cfg: Cfg, presorted: bool = False) -> Case:
    n = 1 << log2
    item = np.dtype(dtype).itemsize
    x = random_keys(_key(n, np.dtype(dtype).num, argsort), n, dtype)
    if presorted:
        x = jnp.sort(x)
    dn = _dname(dtype)
    floating = np.issubdtype(np.dtype(dtype), np.floating)
    pre = _nan_pre_check(dtype, argsort) if floating else None
    if argsort:
        torch = cfg.torch
        return Case(
            "sort", f"argsort {dn} 2^{log2}", n, n * item + n * 4,
            [Variant("jmp.argsort", jmp.argsort, (x,))],
            [Variant("jnp.argsort(stable)", jnp_argsort_stable, (x,))],
            refs=_torch_ref(cfg, "torch.argsort(stable)",
                            lambda t: torch.argsort(t, stable=True), x)
            + _numpy_ref(cfg, "np.argsort(stable)", lambda a: np.argsort(a, kind="stable"), x),
            cub=[f"radix_pairs_{dn}", f"mergesort_pairs_{dn}"],
            pre_check=pre,
        )
    torch = cfg.torch
    name = f"sort {dn} 2^{log2}" + (" presorted" if presorted else "")
    return Case(
        "sort", name, n, 2 * n * item,
        [Variant("jmp.sort", jmp.sort, (x,))],
        [Variant("jnp.sort", jnp.sort, (x,))],
        refs=_torch_ref(cfg, "torch.sort(stable)",
                        lambda t: torch.sort(t, stable=True).values, x)
        + _numpy_ref(cfg, "np.sort(stable)", lambda a: np.sort(a, kind="stable"), x),
        cub=[] if presorted else [f"radix_keys_{dn}", f"mergesort_keys_{dn}"],
        pre_check=pre,
    )


def sort_by_key_case(log2: int) -> Case:
    n = 1 << log2
    k = random_keys(_key(n, 11), n, jnp.float32)
    pos = random_keys(_key(n, 12), (n, 3), jnp.float32)
    ids = random_keys(_key(n, 13), n, jnp.int32)

    def ours(k, pos, ids):
        return jmp.sort_by_key(k, (pos, ids))

    def lax_all(k, pos, ids):
        ks, p0, p1, p2, i = lax.sort((k, pos[:, 0], pos[:, 1], pos[:, 2], ids), num_keys=1,
                                     is_stable=True)
        return ks, (jnp.stack([p0, p1, p2], axis=1), i)

    def argsort_gather(k, pos, ids):
        idx = jnp_argsort_stable(k)
        return k[idx], (pos[idx], ids[idx])

    args = (k, pos, ids)
    return Case(
        "sort", f"sort_by_key f32 + (f32[n,3], i32) 2^{log2}", n, 2 * n * (4 + 12 + 4),
        [Variant("jmp.sort_by_key", ours, args)],
        [Variant("lax.sort(5 operands, stable)", lax_all, args),
         Variant("argsort(stable)+gathers", argsort_gather, args)],
    )


def lax_sort_cases(log2: int) -> list[Callable[[], Case]]:
    n = 1 << log2

    def three_operands() -> Case:
        ops = (random_keys(_key(n, 21), n, jnp.float32), random_keys(_key(n, 22), n, jnp.int32),
               random_keys(_key(n, 23), n, jnp.float32))
        return Case(
            "sort", f"lax_sort f32 key + i32, f32 2^{log2}", n, 2 * n * 12,
            [Variant("jmp.lax_sort", lambda *o: jmp.lax_sort(o, num_keys=1), ops)],
            [Variant("lax.sort(stable)", lambda *o: lax.sort(o, num_keys=1, is_stable=True),
                     ops),
             Variant("lax.sort(default)", lambda *o: lax.sort(o, num_keys=1), ops,
                     check=check_first(1))],
        )

    def two_keys() -> Case:
        ops = (jax.random.randint(_key(n, 31), (n,), 0, max(n // 16, 2), jnp.int32),
               random_keys(_key(n, 32), n, jnp.float32), random_keys(_key(n, 33), n, jnp.int32))
        return Case(
            "sort", f"lax_sort num_keys=2 i32,f32 + i32 2^{log2}", n, 2 * n * 12,
            [Variant("jmp.lax_sort", lambda *o: jmp.lax_sort(o, num_keys=2), ops)],
            [Variant("lax.sort(stable)", lambda *o: lax.sort(o, num_keys=2, is_stable=True),
                     ops),
             Variant("lax.sort(default)", lambda *o: lax.sort(o, num_keys=2), ops,
                     check=check_first(2))],
        )

    return [three_operands, two_keys]


def rows_case(log2: int, width: int, cfg: Cfg) -> Case:
    n = 1 << log2
    x = random_keys(_key(n, width, 41), n, jnp.int32).reshape(-1, width)
    torch = cfg.torch
    return Case(
        "sort", f"rows int32 2^{log2} as (-1, {width})", n, 2 * n * 4,
        [Variant("jmp.sort", jmp.sort, (x,))],
        [Variant("jnp.sort(axis=-1)", lambda v: jnp.sort(v, axis=-1), (x,))],
        refs=_torch_ref(cfg, "torch.sort(dim=-1, stable)",
                        lambda t: torch.sort(t, dim=-1, stable=True).values, x)
        + _numpy_ref(cfg, "np.sort(axis=-1, stable)",
                     lambda a: np.sort(a, axis=-1, kind="stable"), x),
        cub=[f"segsort_keys_int32_seg{width}"],
    )


def searchsorted_case(log2: int, cfg: Cfg, quick: bool) -> Case:
    n = 1 << log2
    a = jnp.sort(random_keys(_key(n, 51), n, jnp.int32))
    v = jnp.sort(random_keys(_key(n, 52), n, jnp.int32))
    args = (a, v)
    baselines = []
    methods = ["scan", "sort"]
    notes = []
    if cfg.platform == "gpu" and not quick:
        methods.insert(1, "scan_unrolled")
    if n * n <= 1 << 26:
        methods.append("compare_all")
    else:
        notes.append("jnp.searchsorted(method='compare_all') skipped: n * m too large")
    if cfg.platform != "gpu" or quick:
        notes.append("jnp.searchsorted(method='scan_unrolled') skipped (GPU only, not --quick)")
    for meth in methods:
        baselines.append(Variant(
            f"jnp.searchsorted({meth})",
            lambda a, v, m=meth: jnp.searchsorted(a, v, method=m), args,
            compile_timeout=cfg.search_compile_timeout if meth == "scan_unrolled" else None,
        ))
    torch = cfg.torch
    return Case(
        "sort", f"searchsorted int32 2^{log2} in 2^{log2}", n, 4 * n + 4 * n + 4 * n,
        [Variant("sorted_v=True", lambda a, v: jmp.searchsorted(a, v, sorted_v=True), args),
         Variant("sorted_v=False", lambda a, v: jmp.searchsorted(a, v), args)],
        baselines,
        refs=_torch_ref(cfg, "torch.searchsorted",
                        lambda a, v: torch.searchsorted(a, v, out_int32=True), a, v)
        + _numpy_ref(cfg, "np.searchsorted", np.searchsorted, a, v),
        notes=notes,
    )


def sort_family(cfg: Cfg, sizes: dict, quick: bool) -> list[Callable[[], Case]]:
    """Case builders (data is made when a case runs, and freed after it)."""
    cases: list[Callable[[], Case]] = []
    dtypes = [jnp.int32, jnp.float32] if quick else [jnp.int32, jnp.float32, jnp.int64,
                                                     jnp.float64]
    for log2 in sizes["sort"]:
        for dtype in dtypes:
            if not _x64_ok(dtype):
                continue
            for argsort in (False, True):
                cases.append(lambda d=dtype, lg=log2, a=argsort: sort_case(d, lg, a, cfg))
    for log2 in (sizes["sort"][-1:] if quick else sizes["sort"]):
        cases.append(lambda lg=log2: sort_case(jnp.int32, lg, False, cfg, presorted=True))
    cases.append(lambda: sort_by_key_case(sizes["sort_by_key"]))
    cases.extend(lax_sort_cases(sizes["lax_sort"]))
    for width in (512,) if quick else ROW_WIDTHS:
        if width < 1 << sizes["rows"]:
            cases.append(lambda w=width: rows_case(sizes["rows"], w, cfg))
    cases.append(lambda: searchsorted_case(sizes["search"], cfg, quick))
    return cases


def presorted_note(rows: list) -> None:
    """Adds ours_random / ours_presorted to the last row when it is a presorted sort (the random
    sort of the same size and dtype ran before it)."""
    r = rows[-1] if rows else {}
    if r.get("status") == "ok" and r["case"].endswith(" presorted"):
        by_case = {x["case"]: x for x in rows if x.get("status") == "ok"}
        rnd = by_case.get(r["case"].removesuffix(" presorted"))
        if rnd:
            r["random_over_presorted"] = rnd["user_s"] / r["user_s"]
            r["random_over_presorted_kernel"] = rnd["kernel_s"] / r["kernel_s"]
            note = (f"ours random / ours presorted = {r['random_over_presorted']:.2f}x user "
                    f"({r['random_over_presorted_kernel']:.2f}x kernel)")
            r["notes"].append(note)
            say(f"{'':<48}note: {note}")


# ---------------------------------------------------------------------------------------------
# Copy rate, peak memory, CUB
# ---------------------------------------------------------------------------------------------


def copy_bandwidth(cfg: Cfg) -> tuple[float, str]:
    """Bytes/s of a copy (read + write counted): cudaMemcpy D2D through CuPy on a GPU (JAX's
    x + 1 kernel time without CuPy); numpy's copyto of 256 MiB on the CPU."""
    if cfg.platform == "gpu":
        try:
            import cupy as cp

            nbytes = 1 << 30
            src = cp.random.randint(0, 2**31 - 1, nbytes // 4, dtype=cp.int32)
            dst = cp.empty_like(src)
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            for _ in range(3):
                cp.cuda.runtime.memcpy(dst.data.ptr, src.data.ptr, src.nbytes, 3)
            samples = []
            for _ in range(max(cfg.repeats, 10)):
                start.record()
                cp.cuda.runtime.memcpy(dst.data.ptr, src.data.ptr, src.nbytes, 3)
                stop.record()
                stop.synchronize()
                samples.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
            del src, dst
            cp.get_default_memory_pool().free_all_blocks()
            return 2 * nbytes / statistics.median(samples), "cudaMemcpy D2D (CuPy), 1 GiB"
        except Exception:  # noqa: BLE001 - CuPy missing or unusable: JAX's x + 1
            k, _ = jax_copy_rate(cfg, 28)
            return k, "JAX x + 1 kernel time (CuPy unavailable), 1 GiB"
    nbytes = 1 << 28
    src = np.random.default_rng(0).integers(0, 2**31 - 1, nbytes // 4, dtype=np.int32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        samples.append(time.perf_counter() - t0)
    return 2 * nbytes / statistics.median(samples), "numpy copyto on the host, 256 MiB"


def jax_x_plus_1(cfg: Cfg, log2: int) -> Variant:
    """JAX's x + 1 on 2^log2 random int32, timed like every case (kernel and user-visible)."""
    x = random_keys(_key(log2, 99), 1 << log2, jnp.int32)
    v = Variant("x + 1", lambda a: a + 1, (x,))
    v.f, v.tag = _named_jit(v.fn)
    first_call(v)
    kernel_times([v], cfg)
    user_time(v, cfg)
    return v


def jax_copy_rate(cfg: Cfg, log2: int) -> tuple[float, float]:
    """(kernel, user-visible) bytes/s of JAX's x + 1 on 2^log2 int32 (read + write)."""
    v = jax_x_plus_1(cfg, log2)
    nbytes = 2 * 4 << log2
    return nbytes / v.kernel_s, nbytes / v.user_s


MEMORY_VARIANTS = {"jmp.sort": jmp.sort, "jnp.sort": jnp.sort}


def memory_child(variant: str, log2: int) -> None:
    """Run in a fresh process: peak device memory of one sort of 2^log2 random int32."""
    dev = jax.devices()[0]
    stats = dev.memory_stats() if hasattr(dev, "memory_stats") else None
    if not stats or "peak_bytes_in_use" not in stats:
        print(json.dumps({"variant": variant, "skipped": f"no peak_bytes_in_use on "
                                                         f"{dev.platform}"}))
        return
    n = 1 << log2
    host = np.random.default_rng(log2).integers(-(2**31), 2**31 - 1, n, dtype=np.int32)
    x = jax.device_put(host)
    x.block_until_ready()
    before = dev.memory_stats()
    compiled = jax.jit(MEMORY_VARIANTS[variant]).lower(x).compile()
    out = compiled(x)
    out.block_until_ready()
    after = dev.memory_stats()
    analysis = compiled.memory_analysis()
    print(json.dumps({
        "variant": variant, "n": n, "input_bytes": int(x.nbytes),
        "in_use_before": before["bytes_in_use"], "peak_before": before["peak_bytes_in_use"],
        "peak_after": after["peak_bytes_in_use"],
        "extra_peak_bytes": after["peak_bytes_in_use"] - before["bytes_in_use"],
        "xla_temp_bytes": getattr(analysis, "temp_size_in_bytes", None),
        "xla_output_bytes": getattr(analysis, "output_size_in_bytes", None),
    }))


def peak_memory(log2: int) -> list[dict]:
    """Peak device memory of jmp.sort vs jnp.sort, each in a fresh subprocess (peaks cannot be
    reset); run before this process starts JAX's backend, so the device is free."""
    results = []
    for variant in MEMORY_VARIANTS:
        cmd = [sys.executable, "-m", "jax_mergepath.bench", "--memory-child", variant,
               "--memory-log2", str(log2)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            results.append(json.loads(line[-1]) if line else
                           {"variant": variant, "skipped": f"rc={proc.returncode}: "
                                                          f"{proc.stderr.strip()[-300:]}"})
        except Exception as err:  # noqa: BLE001 - reported, the run goes on
            results.append({"variant": variant, "skipped": f"{type(err).__name__}: {err}"})
    return results


def print_memory(results: list[dict]) -> None:
    say("== peak device memory, one sort of 2^k random int32 (fresh process each; memory "
        "beyond the input at the peak; XLA's compile-time temp + output)")
    for r in results:
        if "skipped" in r:
            say(f"  {r['variant']:<10} skipped: {r['skipped']}")
            continue
        say(f"  {r['variant']:<10} n=2^{r['n'].bit_length() - 1}: peak beyond input "
            f"{r['extra_peak_bytes'] / 2**20:9.1f} MiB "
            f"({r['extra_peak_bytes'] / r['input_bytes']:.2f}x the input); XLA temp "
            f"{(r['xla_temp_bytes'] or 0) / 2**20:.1f} MiB + output "
            f"{(r['xla_output_bytes'] or 0) / 2**20:.1f} MiB")


def run_cub(path: str, extra: list[str]) -> tuple[dict, list[str]]:
    """Runs the CUB program (or reads a file of its output): {(case, n): us}, its other lines."""
    if os.access(path, os.X_OK) and not os.path.isdir(path):
        try:
            proc = subprocess.run([path, *extra], capture_output=True, text=True, timeout=900)
        except Exception as err:  # noqa: BLE001 - reported, the run goes on
            return {}, [f"# CUB program failed to run: {err}"]
        text = proc.stdout
        info = [] if proc.returncode == 0 else [
            f"# CUB program exit status {proc.returncode}: {proc.stderr.strip()[-400:]}"]
    else:
        with open(path) as fh:
            text, info = fh.read(), [f"# CUB results read from {path}"]
    times = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "CUB":
            try:
                times[(parts[1], int(parts[2]))] = float(parts[3])
            except ValueError:
                info.append(f"# unparsed: {line}")
        elif line.startswith("#"):
            info.append(line)
    return times, info


# ---------------------------------------------------------------------------------------------
# Summary, main
# ---------------------------------------------------------------------------------------------


def print_summary(rows: list) -> None:
    say("\n== summary: user-visible time per call (kernel time); % of copy; speedup = baseline "
        "or reference time / ours")
    say(f"{'case':<48} {'ours user (kernel)':>22} {'%copy':>6}  {'best JAX baseline':<32} "
        f"{'speedup':>15}  {'torch':>6}  {'numpy':>6}  CUB (best)")
    for r in rows:
        if r.get("status") != "ok":
            say(f"{r['case']:<48} {r['status']}")
            continue
        times = f"{_fmt_t(r['user_s'])} ({_fmt_t(r['kernel_s'])})"
        sp = f"{_x(r['speedup_best'])} ({_x(r['speedup_best_kernel'])})"
        torch = next((x["speedup"] for x in r["references"] if x["name"].startswith("torch")
                      and not x["error"]), None)
        numpy = next((x["speedup"] for x in r["references"] if x["name"].startswith("np.")
                      and not x["error"]), None)
        cub = min(r["cub"], key=lambda c: c["us"], default=None)
        cub_s = f"{_x(cub['speedup'])} {cub['name']}" if cub else ""
        say(f"{r['case']:<48} {times:>22} {_pct(r['pct_copy']):>6}  "
            f"{(r['best_baseline'] or '-')[:32]:<32} {sp:>15}  {_x(torch):>6}  {_x(numpy):>6}  "
            f"{cub_s}")


def _sizes(platform: str, max_log2: int | None, min_log2: int, quick: bool) -> dict:
    base = dict(GPU_SIZES if platform == "gpu" else CPU_SIZES)
    top = base["max"] if max_log2 is None else max_log2
    out = {k: min(v, top) for k, v in base.items() if isinstance(v, int)}
    sort_sizes = {s for s in base["sort"] if s <= top}
    if max_log2 is not None or not sort_sizes:
        sort_sizes.add(top)
    if quick:
        sort_sizes = {min(20, top), max(sort_sizes)}
        if platform != "gpu":
            sort_sizes = {min(20, top)}
            for k in ("sort_by_key", "lax_sort", "rows", "search"):
                out[k] = min(out[k], 20)
    out["sort"] = tuple(sorted(sort_sizes))
    merge_top = top if (platform == "gpu" or max_log2 is not None) else min(top, 20)
    if quick:
        out["merge"] = sorted({min(20, merge_top), merge_top})
    else:
        out["merge"] = sorted({*range(min_log2, merge_top + 1, 2),
                               *([27] if merge_top >= 27 else [])})
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Benchmark jax_mergepath against JAX baselines (and torch / numpy / CUB "
                    "references): checks every result, then times kernel and user-visible time.")
    p.add_argument("--family", choices=("merge", "sort", "all"), default="all",
                   help="which cases: merge (merge, merge_by_key), sort (sort, argsort, "
                        "sort_by_key, lax_sort, row sorts, searchsorted, peak memory) or all "
                        "(default: all)")
    p.add_argument("--quick", action="store_true", default=False,
                   help="a short run: int32 (and float32 sorts) only, 2^20 and the largest "
                        "size, one row width, no peak memory (default: off)")
    p.add_argument("--min-log2", type=int, default=16,
                   help="smallest log2 size of the merge cases (default: 16)")
    p.add_argument("--max-log2", type=int, default=None,
                   help="largest log2 size of any case (default: by device: 27 on a GPU; 22 on "
                        "the CPU, whose defaults are merges up to 2^20, sorts at 2^16 and 2^20, "
                        "sort_by_key at 2^22, the rest at 2^20)")
    p.add_argument("--repeats", type=int, default=None,
                   help="profiler-traced calls per variant for the kernel time (default: "
                        f"{GPU_TIMING['repeats']} on a GPU, {CPU_TIMING['repeats']} on the CPU)")
    p.add_argument("--calls", type=int, default=50,
                   help="back-to-back calls per batch for the user-visible time, fewer when a "
                        "batch would exceed --max-batch-s (default: 50)")
    p.add_argument("--min-calls", type=int, default=None,
                   help="fewest calls per batch (default: "
                        f"{GPU_TIMING['min_calls']} on a GPU, {CPU_TIMING['min_calls']} on the "
                        "CPU)")
    p.add_argument("--max-batch-s", type=float, default=None,
                   help="seconds a batch of back-to-back calls should last at most (default: "
                        f"{GPU_TIMING['max_batch_s']} on a GPU, {CPU_TIMING['max_batch_s']} on "
                        "the CPU)")
    p.add_argument("--rounds", type=int, default=None,
                   help="batches per variant, the median is reported (default: "
                        f"{GPU_TIMING['rounds']} on a GPU, {CPU_TIMING['rounds']} on the CPU)")
    p.add_argument("--breakdown", action="store_true", default=False,
                   help="print our operations' kernel times by name (default: off)")
    p.add_argument("--no-torch", action="store_true", default=False,
                   help="skip the torch references even when torch imports (default: use it)")
    p.add_argument("--no-memory", action="store_true", default=False,
                   help="skip the peak-memory subprocesses of the sort family (default: run "
                        "them on a GPU)")
    p.add_argument("--search-compile-timeout", type=float, default=60.0,
                   help="seconds allowed to compile jnp.searchsorted(method='scan_unrolled'); "
                        "skipped beyond (default: 60)")
    p.add_argument("--cub", metavar="PATH", default=None,
                   help="CUB peer: the program built from benchmarks/cub_bench.cu (run before "
                        "JAX starts) or a text file of its output; CUB ratios are printed for "
                        "the matching cases (default: none)")
    p.add_argument("--cub-args", default=None,
                   help="arguments for the CUB program (default: sizes matching this run's "
                        "sort, row and merge cases)")
    p.add_argument("--json", metavar="FILE", default=None,
                   help="write the results (one dict per case, plus the run's header) as JSON "
                        "(default: none)")
    p.add_argument("--memory-child", choices=tuple(MEMORY_VARIANTS), default=None,
                   help="internal: measure one variant's peak memory in this process and exit "
                        "(default: off)")
    p.add_argument("--memory-log2", type=int, default=None,
                   help="log2 size of the peak-memory sorts (default: 27 on a GPU, capped by "
                        "--max-log2)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child, args.memory_log2 or GPU_SIZES["memory"])
        return 0
    families = ("merge", "sort") if args.family == "all" else (args.family,)
    t_start = time.perf_counter()

    # Subprocess work first, while this process holds no device memory: CUB and peak memory
    # (they can only be a GPU's; the backend is not started yet, so ask the build).
    gpu_sizes = _sizes("gpu", args.max_log2, args.min_log2, args.quick)
    cub_times: dict = {}
    cub_info: list[str] = []
    if args.cub:
        extra = (args.cub_args.split() if args.cub_args is not None else
                 ["--sizes", ",".join(map(str, gpu_sizes["sort"])),
                  "--seg-log2", str(gpu_sizes["rows"]), "--merge-log2", str(gpu_sizes["max"])])
        cub_times, cub_info = run_cub(args.cub, extra)
    memory: list[dict] = []
    memory_log2 = min(args.memory_log2 or GPU_SIZES["memory"], gpu_sizes["max"])
    maybe_gpu = jmp.HAS_CUDA and bool(glob.glob("/dev/nvidia[0-9]*"))
    if "sort" in families and not args.no_memory and not args.quick and maybe_gpu:
        memory = peak_memory(memory_log2)

    dev = jax.devices()[0]
    platform = "gpu" if dev.platform == "gpu" else "cpu"
    timing = GPU_TIMING if platform == "gpu" else CPU_TIMING
    cfg = Cfg(
        platform=platform,
        repeats=args.repeats or timing["repeats"],
        calls=args.calls,
        min_calls=args.min_calls or timing["min_calls"],
        rounds=args.rounds or timing["rounds"],
        max_batch_s=args.max_batch_s or timing["max_batch_s"],
        breakdown=args.breakdown,
        search_compile_timeout=args.search_compile_timeout,
    )
    sizes = _sizes(platform, args.max_log2, args.min_log2, args.quick)
    say(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, jax_mergepath "
        f"{jmp.__version__} CUDA={jmp.HAS_CUDA}, x64={jax.config.jax_enable_x64}")
    if not args.no_torch and "sort" in families:
        try:
            import torch

            cfg.torch_device = "cuda" if platform == "gpu" else "cpu"
            if cfg.torch_device == "cuda" and not torch.cuda.is_available():
                raise RuntimeError("torch has no CUDA")
            cfg.torch = torch
            say(f"torch {torch.__version__} on {cfg.torch_device}: reference only")
        except Exception as err:  # noqa: BLE001 - a reference only
            say(f"torch references skipped: {type(err).__name__}: {err}")
    cfg.copy_bps, copy_name = copy_bandwidth(cfg)
    say(f"copy: {cfg.copy_bps / 1e12:.3f} TB/s ({copy_name}, read + write counted): the "
        "ceiling of '% copy'")
    k_bps, u_bps = jax_copy_rate(cfg, 28 if platform == "gpu" else 24)
    say(f"JAX x + 1 for comparison: {k_bps / 1e12:.3f} TB/s kernel, {u_bps / 1e12:.3f} TB/s "
        "user-visible")
    floor = jax_x_plus_1(cfg, 10)
    say(f"dispatch floor: a jitted x + 1 on 1024 int32 takes {_fmt_t(floor.user_s)} per call "
        f"user-visible ({_fmt_t(floor.kernel_s)} kernel): about the floor of user-visible "
        "times")
    if cub_info or cub_times:
        for line in cub_info:
            say(line)
        for (c, n), us in cub_times.items():
            say(f"CUB {c} {n} {us:.3f}")
        memcpy = [(n, us) for (c, n), us in cub_times.items() if c == "memcpy_d2d"]
        if memcpy:
            n, us = memcpy[0]
            say(f"CUB program's cudaMemcpy D2D: {2 * n / us / 1e6:.3f} TB/s "
                f"({len(cub_times)} CUB timings)")
    say(f"timing: kernel = trace of {cfg.repeats} blocked calls per variant ("
        + ("kernels on the GPU's streams" if platform == "gpu" else "XLA thunks on host threads")
        + f"); user-visible = up to {cfg.calls} back-to-back calls (at least {cfg.min_calls}, "
        f"~{cfg.max_batch_s} s a batch) blocked once, median of {cfg.rounds}")
    say(f"sizes (log2): {json.dumps(sizes)}")

    rows: list = []
    builders: list = []
    if "merge" in families:
        builders += [("merge", b) for b in merge_cases(sizes["merge"], args.quick,
                                                       1 << sizes["max"])]
    if "sort" in families:
        builders += [("sort", b) for b in sort_family(cfg, sizes, args.quick)]
    family = None
    for fam, build in builders:
        if fam != family:
            family = fam
            say(f"\n== {fam} family\n{HEADER}")
        case = build()
        try:
            run_case(case, cfg, cub_times, rows)
        except Exception as err:  # noqa: BLE001 - one broken case must not end the run
            say(f"{case.name:<46} ERROR: {type(err).__name__}: {str(err).splitlines()[0][:200]}")
            rows.append({"family": case.family, "case": case.name, "n": case.n,
                         "status": f"ERROR: {type(err).__name__}: {err}"[:400]})
        presorted_note(rows)
        del case
    if "sort" in families:
        if memory:
            print_memory(memory)
        elif platform == "gpu":
            say("== peak device memory: skipped (--no-memory, --quick or no CUDA build)")
        else:
            say("== peak device memory: skipped on the CPU (memory_stats() has no "
                "peak_bytes_in_use there)")
    print_summary(rows)
    elapsed = time.perf_counter() - t_start
    say(f"\ntotal {elapsed:.0f} s")
    if args.json:
        meta = {
            "device": dev.device_kind, "platform": dev.platform, "jax": jax.__version__,
            "jax_mergepath": jmp.__version__, "has_cuda": jmp.HAS_CUDA,
            "copy_bps": cfg.copy_bps, "copy_method": copy_name,
            "jax_x_plus_1_bps": {"kernel": k_bps, "user": u_bps},
            "dispatch_floor_s": {"kernel": floor.kernel_s, "user": floor.user_s},
            "timing": {"repeats": cfg.repeats, "calls": cfg.calls, "min_calls": cfg.min_calls,
                       "rounds": cfg.rounds, "max_batch_s": cfg.max_batch_s},
            "sizes": sizes, "argv": sys.argv[1:] if argv is None else argv,
            "elapsed_s": elapsed,
        }
        cub_rows = [{"case": c, "n": n, "us": us} for (c, n), us in sorted(cub_times.items())]
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows, "memory": memory, "cub": cub_rows}, fh,
                      indent=1)
        say(f"results written to {args.json}")
    bad = [r for r in rows if r.get("status") != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    sys.exit(main())
