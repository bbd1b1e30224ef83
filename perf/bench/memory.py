"""Peak device memory of one sort (jmp.sort vs jnp.sort of 2^k random int32): `peak_memory` runs
`python -m perf.bench --memory-child VARIANT` once per variant in a fresh process (peaks cannot
be reset), from the repository root, before this process starts JAX; `memory_child` is that
process's measurement (one JSON line on stdout); `print_memory` prints the results."""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jax_mergepath as jmp
from perf import ROOT
from perf.bench.console import say

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
        cmd = [sys.executable, "-m", "perf.bench", "--memory-child", variant,
               "--memory-log2", str(log2)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
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
