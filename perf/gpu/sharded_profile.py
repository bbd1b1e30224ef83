"""GPU 0's timeline of the sort of an int32 array sharded along its axis over every GPU (issue
37's case, perf/sharded_bench.py's data): after warm-up, `--calls` blocked calls under one
profiler trace; prints, for the last call, every event of GPU 0's streams in start order (start
offset, duration, gap before it, name) and the time per event name, so the exchange's
collectives and copies can be told from the local sorts.

    python3 perf/gpu/sharded_profile.py [--log2 30] [--calls 3] [--all]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp

# The repository root, last on sys.path: perf's helpers, and jax_mergepath stays the installed
# package (imported above).
sys.path.append(str(Path(__file__).resolve().parents[2]))
from perf.bench.trace import device_events  # noqa: E402
from perf.sharded_bench import data, mesh_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log2", type=int, default=30)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--all", action="store_true", help="every call's events")
    args = parser.parse_args()
    g = len(jax.devices())
    x = data(1 << args.log2, jnp.int32, NamedSharding(mesh_of(g), P("d")))
    f = jax.jit(jmp.sort)
    for _ in range(2):
        jax.block_until_ready(f(x))
    with tempfile.TemporaryDirectory(prefix="jmpshard") as tmp:
        jax.profiler.start_trace(tmp)
        for _ in range(args.calls):
            jax.block_until_ready(f(x))
        jax.profiler.stop_trace()
        path = glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True)[0]
        events = sorted(device_events(path, "gpu"), key=lambda e: e.start_ns)
    if not events:
        sys.exit("no GPU events in the trace (this profiles GPUs)")
    # the last call: events after the (calls - 1)-th largest gap (blocked calls leave one each;
    # --all: every event of the trace)
    gaps = sorted(
        ((events[i].start_ns - (events[i - 1].start_ns + events[i - 1].duration_ns), i)
         for i in range(1, len(events))), reverse=True)
    cut = max(i for _, i in gaps[: args.calls - 1]) if gaps and args.calls > 1 else 0
    last = events if args.all else events[cut:]
    t0 = last[0].start_ns
    end = t0
    per_name: dict = defaultdict(float)
    print(f"{g} GPUs, int32 2^{args.log2}, GPU 0, the last of {args.calls} calls:")
    for ev in last:
        gap = max(0.0, ev.start_ns - end)
        print(f"{(ev.start_ns - t0) / 1e3:10.1f} us  {ev.duration_ns / 1e3:9.1f} us  "
              f"gap {gap / 1e3:7.1f}  {ev.name[:90]}")
        end = max(end, ev.start_ns + ev.duration_ns)
        per_name[ev.name[:60]] += ev.duration_ns
    print(f"span {(end - t0) / 1e3:.1f} us")
    for name, ns in sorted(per_name.items(), key=lambda kv: -kv[1])[:15]:
        print(f"{ns / 1e3:10.1f} us  {name}")


if __name__ == "__main__":
    main()
