# Sorts along a SHARDED axis (docs/contract.md "Sharding"): the scripts in sharding/ run in fresh
# processes (the device count is fixed when jax starts). sharded_axis.py, with 8 host CPU
# devices, checks sort / argsort / sort_by_key / lax_sort inside a shard_map (axis_name=), under
# jax.jit and eagerly on NamedSharding'd arrays: the unsharded jnp result bit for bit, the input's
# sharding kept, no all-gather of the data in the compiled program; inside check_sorted_inputs()
# a sharded sort on 2, 4 and 8 devices carries no check (its internal merges are row-level) and
# a sharded merge checks the user's shards; with x64 off and on (the 64-bit dtypes).
# multiprocess_sort.py runs as 2 jax.distributed processes of 4 CPU devices each on localhost and
# checks every process's shards of a sort over all 8 devices.
from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

HERE = pathlib.Path(__file__).parent / "sharding"
SCRIPT = HERE / "sharded_axis.py"
MULTIPROCESS = HERE / "multiprocess_sort.py"
# timeouts (s): sharded_axis.py --quick, all of its cases, each multiprocess_sort.py process
QUICK_TIMEOUT, ALL_TIMEOUT, PROCESS_TIMEOUT = 300, 1200, 400
# cases of sharded_axis.py: --quick, --quick --x64, all, all with --x64
QUICK, QUICK_X64, ALL, ALL_X64 = 33, 5, 86, 92


def _env(devices: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               JAX_PLATFORMS="cpu")
    env.pop("JAX_ENABLE_X64", None)
    return env


def _run_script(*flags: str, timeout: float) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT), *flags], env=_env(8), capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert "BAD" not in proc.stdout, proc.stdout
    return proc.stdout


# The core cases with x64 off (--quick: about 60 s on 2 cores) in the fast tier; with x64 on (the
# 64-bit dtypes, 20 s) and all of them (several minutes each) in the slow tier.
@pytest.mark.parametrize("x64", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["x32", "x64"])
def test_sorts_along_a_sharded_axis(x64):
    out = _run_script("--quick", *(["--x64"] if x64 else []), timeout=QUICK_TIMEOUT)
    assert out.count("\nok ") >= (QUICK_X64 if x64 else QUICK), out


@pytest.mark.slow
@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_sorts_along_a_sharded_axis_all_cases(x64):
    out = _run_script(*(["--x64"] if x64 else []), timeout=ALL_TIMEOUT)
    assert out.count("\nok ") >= (ALL_X64 if x64 else ALL), out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_processes(*extra: str) -> list[str]:
    """multiprocess_sort.py as processes 0 and 1; returns their outputs (fails on a non-zero
    exit or a timeout, killing both)."""
    port = str(_free_port())
    procs = [
        subprocess.Popen([sys.executable, str(MULTIPROCESS), str(i), port, *extra], env=_env(4),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)
    ]
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=PROCESS_TIMEOUT)
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for i, (p, out) in enumerate(zip(procs, outs, strict=True)):
        assert p.returncode == 0, f"process {i} exited {p.returncode}:\n{out[-8000:]}"
    return outs


@pytest.mark.slow
def test_multiprocess_plumbing():
    """Plain jax: 2 processes of 4 CPU devices run cross-process collectives (the setup the
    next test relies on)."""
    for i, out in enumerate(_run_processes("--plain")):
        assert out.count("\nok ") + out.startswith("ok ") >= 1, f"process {i}:\n{out}"


# About 2 minutes on 2 cores (two processes compiling, eager calls of the sharded sort): slow tier.
@pytest.mark.slow
def test_multiprocess_sort():
    for i, out in enumerate(_run_processes()):
        assert "BAD" not in out, f"process {i}:\n{out}"
        assert out.count("ok process") >= 14, f"process {i}:\n{out}"
