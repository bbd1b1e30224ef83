# top_k along a SHARDED axis (docs/contract.md "Sharding"): tests/sharding/sharded_topk.py with 8
# host CPU devices checks the single-device result bit for bit inside shard_map (axis_name=),
# under jax.jit and eagerly on arrays split over an explicit mesh axis, with the compiled
# program's gathers no larger than the candidates; rows, top_k_by_key, grad; with x64, int64
# global indices past 2**31 keys. The quick cases here (about 10 s on 2 cores); every case, x64
# off and on, in test_sharded_slow.py.
from __future__ import annotations

import pytest
from sharded_scripts import QUICK_TIMEOUT, TOPK, run_script

pytestmark = pytest.mark.fast


def test_top_k_along_a_sharded_axis():
    run_script(TOPK, "--quick", timeout=QUICK_TIMEOUT)
