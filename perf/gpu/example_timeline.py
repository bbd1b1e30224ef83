"""Where an example's step goes on the GPU: runs examples/NAME.py (its checks and timings, as
`python examples/NAME.py ARGS` does), then traces `--calls` back-to-back calls of each version's
jitted scan and prints, per version, the GPU time per step of every kernel name (largest first)
and of four groups: jax_mergepath's kernels, XLA's sorts (CUB or its sort network), copies and
memsets, and everything else (fusions of the step's other work).

    python3 perf/gpu/example_timeline.py species_energy --size gpu [--calls 3]
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

_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_ROOT / "examples"))
# The repository root, last on sys.path: perf.bench's trace reader, while jax_mergepath resolves
# to the installed package, not the source folder.
sys.path.append(str(_ROOT))
from perf.bench.trace import device_events  # noqa: E402


def group_of(name: str) -> str:
    low = name.lower()
    if "jax_mergepath" in low:
        return "jax_mergepath kernels"
    if "sort" in low or "cub" in low or "radix" in low:
        return "XLA sorts"
    if "memcpy" in low or "memset" in low or low.startswith("copy"):
        return "copies, memsets"
    return "other work (fusions)"


def profile(fn, args, calls: int, steps: int, label: str) -> None:
    """GPU time per step of each kernel name over `calls` traced back-to-back calls."""
    jax.block_until_ready(fn(*args))
    with tempfile.TemporaryDirectory(prefix="jmpex") as tmp:
        jax.profiler.start_trace(tmp)
        outs = [fn(*args) for _ in range(calls)]
        jax.block_until_ready(outs)
        jax.profiler.stop_trace()
        path = glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True)[0]
        events = device_events(path, "gpu")
    per_name: dict = defaultdict(float)
    count: dict = defaultdict(int)
    for ev in events:
        per_name[ev.name] += ev.duration_ns
        count[ev.name] += 1
    span = (max(e.start_ns + e.duration_ns for e in events) - min(e.start_ns for e in events))
    busy = sum(per_name.values())
    scale = 1e3 * calls * steps  # ns -> us per step
    print(f"== {label}: span {span / scale:.1f} us a step, kernels {busy / scale:.1f} us a "
          f"step ({len(events) / (calls * steps):.1f} kernels a step)")
    groups: dict = defaultdict(float)
    for name, ns in per_name.items():
        groups[group_of(name)] += ns
    for g, ns in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"   {g:28s} {ns / scale:9.1f} us a step")
    for name, ns in sorted(per_name.items(), key=lambda kv: -kv[1])[:14]:
        print(f"     {ns / scale:8.1f} us  x{count[name] / (calls * steps):5.2f}  {name[:90]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("example", choices=["species_energy", "cell_list", "sorted_stream"])
    p.add_argument("--calls", type=int, default=3, help="traced calls of each version")
    ours, rest = p.parse_known_args()
    module = __import__(ours.example)
    timed = module.compare_timings

    def compare_and_profile(fast, base, args, *, reps, steps, **kw):
        out = timed(fast, base, args, reps=reps, steps=steps, **kw)
        profile(fast, args, ours.calls, steps, "jax_mergepath")
        profile(base, args, ours.calls, steps, "jnp only")
        return out

    module.compare_timings = compare_and_profile
    module.main(rest)


if __name__ == "__main__":
    main()
