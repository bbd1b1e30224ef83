# Batch-sharded rows run per device (docs/contract.md "Sharding"): the script in sharding/ runs in a
# fresh process with 4 host CPU devices (the device count is fixed when jax starts) and checks, for
# merges, sorts and queries, plain and vmapped, that the compiled program holds no collective,
# the outputs keep the batch sharding, and the results equal the unsharded ones. Under both
# partitioners (Shardy, jax's default, and GSPMD).
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

SCRIPT = pathlib.Path(__file__).parent / "sharding" / "batch_sharded.py"


@pytest.mark.parametrize("shardy", ["1", pytest.param("0", marks=pytest.mark.slow)],
                         ids=["shardy", "gspmd"])
def test_batch_sharded_calls_run_per_device(shardy):
    env = dict(os.environ)
    env.update(
        XLA_FLAGS="--xla_force_host_platform_device_count=4",
        JAX_PLATFORMS="cpu",
        JAX_USE_SHARDY_PARTITIONER=shardy,
    )
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("ok ") >= 13, proc.stdout
    assert f"partitioner: {'shardy' if shardy == '1' else 'gspmd'}" in proc.stdout, proc.stdout
