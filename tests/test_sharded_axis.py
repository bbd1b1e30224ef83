# Calls along a SHARDED axis (docs/contract.md "Sharding"), the fast tier's smoke cases, each in
# a fresh process with 8 host CPU devices (about 10 s on 2 cores): a sort inside a shard_map with
# axis_name= (tests/sharding/sharded_axis.py), a sort under plain jax.jit on AUTO mesh axes
# (auto_axes.py: the unsharded result bit for bit, the input's sharding kept), a top_k there
# (sharded_topk.py). Every case of every script with x64 off, the 64-bit cases with x64 on, and
# device_counts.py on 3, 5, 6 and 7 devices: test_sharded_slow.py (the slow tier, which .ci/run
# runs too).
from __future__ import annotations

import pytest
from sharded_scripts import AUTO, QUICK_TIMEOUT, SORTS, TOPK, run_script

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)


@pytest.mark.parametrize(
    ("script", "case"),
    [(SORTS, "shard_map dtype float32"), (AUTO, "in_shardings"), (TOPK, "auto axes, jit")],
    ids=["shard_map-sort", "auto-in_shardings", "auto-top_k"],
)
def test_sharded_smoke(script, case):
    run_script(script, "--quick", "-k", case, timeout=QUICK_TIMEOUT, want=1)
