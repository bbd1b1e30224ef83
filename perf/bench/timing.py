"""A variant (one way to compute a case's result) and its timings: `first_call` compiles and
runs it once (with an optional compile timeout); `kernel_times` sets the kernel time of jitted
variants from a profiler trace (trace.py); `user_time` the user-visible time (wall time per call
of back-to-back calls, blocked once a batch); `host_kernel_time` the 'kernel' time of numpy /
torch references."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax

from perf.bench.config import Cfg
from perf.bench.console import say
from perf.bench.trace import traced


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


def _per_call(ns_by_name: dict, repeats: int) -> dict:
    return {k: ns / repeats / 1e9 for k, ns in ns_by_name.items()}


def kernel_times(variants: list[Variant], cfg: Cfg) -> None:
    """Sets kernel_s (and breakdown, est_s) of warm jax variants from one profiler trace; a
    variant the trace does not name (no hlo_module stats) gets a trace of its own (GPU: every
    stream event) or, on the CPU, the median of blocked calls."""
    if not variants:
        return
    found = traced(variants, cfg.repeats, cfg.platform, {"jit_" + v.tag for v in variants})
    for v in variants:
        hit = found.get("jit_" + v.tag)
        if hit:
            v.kernel_s = hit[0] / cfg.repeats / 1e9
            v.breakdown = _per_call(hit[1], cfg.repeats)
            v.kernel_method = "trace"
            continue
        if cfg.platform == "gpu":
            alone = traced([v], cfg.repeats, "gpu", set(), all_events=True)
            if None in alone:
                v.kernel_s = alone[None][0] / cfg.repeats / 1e9
                v.breakdown = _per_call(alone[None][1], cfg.repeats)
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
    """Sets user_s: wall time per call of back-to-back calls, blocked once per batch, after a few
    untimed calls (the GPU idles while the kernel times' trace is parsed: the first variant timed
    after it ran 25-45 us a call slower than the same program timed later, topk bench of 0cc5a4a
    on an H200, docs/performance.md)."""
    n = _batch_calls(v.est_s, cfg)
    if v.kind == "jax":
        jax.block_until_ready([v.f(*v.args) for _ in range(min(n, 3))])
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
