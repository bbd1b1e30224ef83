# Calls along a SHARDED axis (docs/contract.md "Sharding"): the scripts in sharding/ run in fresh
# processes with 8 host CPU devices (the device count is fixed when jax starts); each prints one
# line a case. sharded_axis.py: sort / argsort / sort_by_key / lax_sort inside a shard_map
# (axis_name=), under jax.jit and eagerly on explicit-axis arrays (the unsharded jnp result bit
# for bit, the input's sharding kept, no all-gather of the data), and inside
# check_sorted_inputs(). auto_axes.py: every function under plain jax.jit on AUTO mesh axes
# (in_shardings, with_sharding_constraint, vmap, grad, jvp, export, the compiled program's
# collectives bounded by the splitter samples, single-device programs unchanged); --gspmd: under
# GSPMD. sharded_merge.py: the merge family and the queries along a split axis (the co-rank merge
# moves its misplaced elements; adversarial inputs). sharded_types.py: jit / vmap / grad over
# explicit-axis rows and split axes (the primitives' sharded types), the checked mode on 2, 4 and
# 8 devices. multiprocess_sort.py --launch 2: 2 jax.distributed processes of 4 CPU devices each
# (explicit and auto axes, a merge). With x64 off and on (the 64-bit dtypes).
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

HERE = pathlib.Path(__file__).parent / "sharding"
MULTIPROCESS = HERE / "multiprocess_sort.py"
# timeouts (s): a script's --quick run, all of its cases, the two processes together
QUICK_TIMEOUT, ALL_TIMEOUT, PROCESS_TIMEOUT = 600, 2400, 900
# (script, its cases: --quick, --quick --x64, all, all with --x64)
SORTS = ("sharded_axis.py", 37, 5, 86, 92)
AUTO = ("auto_axes.py", 21, 25, 38, 46)
MERGES = ("sharded_merge.py", 8, 5, 44, 31)
TYPES = ("sharded_types.py", 8, 8, 17, 17)


def _env(devices: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               JAX_PLATFORMS="cpu")
    env.pop("JAX_ENABLE_X64", None)
    return env


def _run_script(script: tuple, *flags: str, timeout: float) -> str:
    name, quick, quick_x64, every, every_x64 = script
    proc = subprocess.run([sys.executable, str(HERE / name), *flags], env=_env(8),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert "BAD" not in proc.stdout, proc.stdout
    x64 = "--x64" in flags
    want = (quick_x64 if x64 else quick) if "--quick" in flags else (every_x64 if x64 else every)
    assert proc.stdout.count("\nok ") >= want, proc.stdout
    return proc.stdout


# The core cases of the sorts and of auto axes with x64 off (--quick: about 60 s and 90 s on 2
# cores) in the fast tier; the rest (several minutes each) in the slow tier.
@pytest.mark.parametrize("script", [
    SORTS, AUTO, pytest.param(MERGES, marks=pytest.mark.slow),
    pytest.param(TYPES, marks=pytest.mark.slow)], ids=["sorts", "auto", "merges", "types"])
def test_sharded_quick(script):
    _run_script(script, "--quick", timeout=QUICK_TIMEOUT)


@pytest.mark.slow
@pytest.mark.parametrize("script", [SORTS, AUTO, MERGES, TYPES],
                         ids=["sorts", "auto", "merges", "types"])
@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_sharded_all_cases(script, x64):
    _run_script(script, *(["--x64"] if x64 else []), timeout=ALL_TIMEOUT)


@pytest.mark.slow
def test_auto_axes_under_gspmd():
    _run_script(("auto_axes.py", 20, 0, 0, 0), "--quick", "--gspmd", timeout=QUICK_TIMEOUT)


def _run_processes(*extra: str) -> str:
    """multiprocess_sort.py's launcher: 2 processes of 4 CPU devices; their outputs (fails on
    a non-zero exit or a timeout)."""
    proc = subprocess.run([sys.executable, str(MULTIPROCESS), "--launch", "2",
                           "--local-devices", "4", *extra], env=_env(4), capture_output=True,
                          text=True, timeout=PROCESS_TIMEOUT)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_multiprocess_plumbing():
    """Plain jax: 2 processes of 4 CPU devices run cross-process collectives (the setup the
    next test relies on)."""
    out = _run_processes("--plain")
    assert out.count("\nok process") >= 2, out


# About 3 minutes on 2 cores (two processes compiling, eager calls of the sharded sort): slow tier.
@pytest.mark.slow
def test_multiprocess_sort():
    out = _run_processes()
    assert "BAD" not in out, out
    assert out.count("\nok process") >= 2 * 24, out
