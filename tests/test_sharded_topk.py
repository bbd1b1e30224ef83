# top_k along a SHARDED axis (docs/contract.md "Selection"): sharding/sharded_topk.py runs in a
# fresh process with 8 host CPU devices (the device count is fixed when jax starts) and checks
# the single-device result bit for bit inside shard_map (axis_name=), under jax.jit and eagerly
# on arrays split over an explicit mesh axis, with the compiled program's gathers no larger than
# the candidates; rows, top_k_by_key, grad; with x64, int64 global indices past 2**31 keys.
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from test_sharded_axis import _env

pytestmark = pytest.mark.fast  # (the quick cases; every case, x64 off and on: slow)

SCRIPT = pathlib.Path(__file__).parent / "sharding" / "sharded_topk.py"


def _run(*flags: str, timeout: float) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT), *flags], env=_env(8), capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert "BAD" not in proc.stdout and "0 failures" in proc.stdout, proc.stdout
    return proc.stdout


# --quick with x64 off in the fast tier (about 20 s on 2 cores); every case, x64 off and on, in
# the slow tier.
def test_top_k_along_a_sharded_axis():
    out = _run("--quick", timeout=400)
    assert out.count("\nok ") >= 14, out


@pytest.mark.slow
@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_top_k_along_a_sharded_axis_all_cases(x64):
    out = _run(*(["--x64"] if x64 else []), timeout=1200)
    assert out.count("\nok ") >= 100, out
