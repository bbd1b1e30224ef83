# Calls along a SHARDED axis (docs/contract.md "Sharding"), the slow tier (several minutes a
# script on 2 cores): every case of the scripts in tests/sharding/ with 8 host CPU devices, x64
# off, and their 64-bit cases with x64 on: sharded_axis.py (sorts), auto_axes.py (auto mesh
# axes; also under GSPMD), sharded_merge.py (the merge family and the queries along a split
# axis: the co-rank merge moves its misplaced elements, adversarial inputs), sharded_types.py
# (jit / vmap / grad over explicit-axis rows and split axes: the primitives' sharded types; the
# checked mode on 2, 4 and 8 devices), sharded_topk.py (top_k along a split axis); and
# multiprocess_sort.py --launch 2: 2 jax.distributed processes of 4 CPU devices each (explicit
# and auto axes, a merge); device_counts.py on 3, 5, 6 and 7 devices (the received runs' ragged
# merge where the device count is not a power of two).
from __future__ import annotations

import pytest
from sharded_scripts import (
    ALL_TIMEOUT,
    AUTO,
    COUNTS,
    MERGES,
    QUICK_TIMEOUT,
    SORTS,
    TOPK,
    TYPES,
    run_processes,
    run_script,
)

pytestmark = pytest.mark.slow  # the full tier (.ci/run)


@pytest.mark.parametrize("script", [SORTS, AUTO, MERGES, TYPES, TOPK],
                         ids=["sorts", "auto", "merges", "types", "topk"])
@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_sharded_all_cases(script, x64):
    # x64 on: the scripts' 64-bit cases (their --quick --x64 set: 64-bit dtypes, int64 positions
    # and indices); every other case runs with x64 off (the whole x64 rerun took 15 of 33 min)
    run_script(script, *(["--x64", "--quick"] if x64 else []), timeout=ALL_TIMEOUT)


@pytest.mark.parametrize("devices", [3, 5, 6, 7])
def test_sort_on_device_counts(devices):
    run_script(COUNTS, timeout=ALL_TIMEOUT, devices=devices)


def test_auto_axes_under_gspmd():
    run_script(("auto_axes.py", 20, 0, 0, 0), "--quick", "--gspmd", timeout=QUICK_TIMEOUT)


def test_multiprocess_plumbing():
    """Plain jax: 2 processes of 4 CPU devices run cross-process collectives (the setup the
    next test relies on)."""
    assert run_processes("--plain").count("\nok process") >= 2


def test_multiprocess_sort():  # about 3 minutes on 2 cores: two processes compiling
    out = run_processes()
    assert "BAD" not in out, out
    assert out.count("\nok process") >= 2 * 24, out
