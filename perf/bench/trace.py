"""Kernel time from a profiler trace: `named_jit` jits a function under a unique name (the
trace's hlo_module stat is "jit_" + that name), `traced` runs variants under one trace and
returns, per module, the busy time (union of event intervals) and the time per event name of
the device's (GPU: stream events) or the host's (CPU: XLA thunks) XLA events (`device_events`,
also read by perf/gpu/probe_cases.py's timeline and perf/gpu/example_timeline.py)."""

from __future__ import annotations

import glob
import itertools
import os
import tempfile
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from typing import NamedTuple

import jax

_TAGS = itertools.count()


def named_jit(fn: Callable) -> tuple[Callable, str]:
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


class DeviceEvent(NamedTuple):
    start_ns: float
    duration_ns: float
    name: str
    stats: list  # (name, value) pairs


def device_events(path: str, platform: str) -> list[DeviceEvent]:
    """The XLA events of a trace file on the device (GPU: its stream lines) or the host (CPU:
    its XLA thunks), in the file's order."""
    data = jax.profiler.ProfileData.from_file(path)
    plane_name = "/device:GPU:0" if platform == "gpu" else "/host:CPU"
    events = []
    with warnings.catch_warnings():  # jax 0.11: "builtin type event_stats has no __module__"
        warnings.simplefilter("ignore", DeprecationWarning)
        for plane in data.planes:
            if plane.name != plane_name:
                continue
            for line in plane.lines:
                if platform == "gpu" and not line.name.startswith("Stream"):
                    continue
                events += [DeviceEvent(ev.start_ns, ev.duration_ns, ev.name, list(ev.stats))
                           for ev in line.events]
    return events


def _parse_trace(path: str, platform: str, modules: set[str], all_events: bool = False):
    """Per module: (busy ns, {event name: ns}) of the device's (GPU) or host's (CPU) XLA events.
    all_events: every GPU stream event counts, under the key None (one-variant traces)."""
    intervals: dict = defaultdict(list)
    names: dict = defaultdict(lambda: defaultdict(float))
    for ev in device_events(path, platform):
        if all_events:
            mod = None
        else:
            mod = next((v for k, v in ev.stats if k == "hlo_module"), None)
            if mod not in modules:
                continue
        intervals[mod].append((ev.start_ns, ev.start_ns + ev.duration_ns))
        names[mod][ev.name] += ev.duration_ns
    return {m: (_union_ns(iv), dict(names[m])) for m, iv in intervals.items()}


def traced(variants: list, repeats: int, platform: str, modules: set[str],
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
