# Calls along a SHARDED axis (docs/contract.md "Sharding"), the fast tier: the core cases of
# tests/sharding/sharded_axis.py (sort / argsort / sort_by_key / lax_sort inside a shard_map with
# axis_name=, under jax.jit and eagerly on explicit-axis arrays: the unsharded jnp result bit for
# bit, the input's sharding kept, no all-gather of the data; sorts inside check_sorted_inputs())
# and of auto_axes.py (every function under plain jax.jit on AUTO mesh axes: in_shardings,
# with_sharding_constraint, vmap, grad, jvp, export, the compiled program's collectives bounded
# by the splitter samples, single-device programs unchanged), with 8 host CPU devices (about 60
# and 90 s on 2 cores). The rest is test_sharded_slow.py.
from __future__ import annotations

import pytest
from sharded_scripts import AUTO, QUICK_TIMEOUT, SORTS, run_script

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)


@pytest.mark.parametrize("script", [SORTS, AUTO], ids=["sorts", "auto"])
def test_sharded_quick(script):
    run_script(script, "--quick", timeout=QUICK_TIMEOUT)
