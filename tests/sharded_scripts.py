# Runs the scripts in tests/sharding/ for test_sharded_axis.py (fast tier) and
# test_sharded_slow.py (slow tier): each in a fresh process with host CPU devices (the device
# count is fixed when jax starts), failing on a non-zero exit, a BAD line or fewer ok lines than
# the script's cases.
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent / "sharding"
# timeouts (s): a script's --quick run, all of its cases, the processes of the launcher together
QUICK_TIMEOUT, ALL_TIMEOUT, PROCESS_TIMEOUT = 600, 2400, 900
# (script, its cases: --quick, --quick --x64, all, all with --x64)
SORTS = ("sharded_axis.py", 37, 5, 92, 92)
AUTO = ("auto_axes.py", 21, 25, 38, 46)
MERGES = ("sharded_merge.py", 8, 5, 44, 31)
TYPES = ("sharded_types.py", 8, 8, 17, 17)
TOPK = ("sharded_topk.py", 24, 25, 204, 301)
COUNTS = ("device_counts.py", 2, 0, 75, 0)  # (on any device count: run_script's devices)


def env(devices: int) -> dict[str, str]:
    out = dict(os.environ)
    out.update(XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               JAX_PLATFORMS="cpu")
    out.pop("JAX_ENABLE_X64", None)
    return out


def run_script(script: tuple, *flags: str, timeout: float, want: int | None = None,
               devices: int = 8) -> str:
    """The script with flags on `devices` devices; its output. want: the ok lines expected
    (default: the script's count for --quick / all cases, x64 or not)."""
    name, quick, quick_x64, every, every_x64 = script
    proc = subprocess.run([sys.executable, str(HERE / name), *flags], env=env(devices),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert "BAD" not in proc.stdout, proc.stdout
    if want is None:
        x64 = "--x64" in flags
        quick_run = "--quick" in flags
        want = (quick_x64 if x64 else quick) if quick_run else (every_x64 if x64 else every)
    assert proc.stdout.count("\nok ") >= want, proc.stdout
    return proc.stdout


def run_processes(*extra: str) -> str:
    """multiprocess_sort.py's launcher: 2 processes of 4 CPU devices; their outputs (fails on
    a non-zero exit or a timeout)."""
    proc = subprocess.run([sys.executable, str(HERE / "multiprocess_sort.py"), "--launch", "2",
                           "--local-devices", "4", *extra], env=env(4), capture_output=True,
                          text=True, timeout=PROCESS_TIMEOUT)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    return proc.stdout
