# The lab's scan benchmark (perf/scan_loop.py: sorts inside one jitted lax.scan of fresh keys) at a
# tiny size on the CPU, in a subprocess: its JSON holds every (op, dtype) cell with positive times
# a step, and ours agrees with the JAX spelling bit for bit after the whole scan (the carry's
# bits), both sort and argsort then a gather. The slow tier (~20 s on 2 cores).
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_scan_loop_cells_agree_and_time(tmp_path):
    out = tmp_path / "scan.json"
    run = subprocess.run(
        [sys.executable, "-m", "perf.scan_loop", "--steps", "3", "--rounds", "1", "--log2", "11",
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    cells = json.loads(out.read_text())["cells"]
    assert {(c["op"], c["dtype"]) for c in cells} == {
        (op, dtype) for op in ("sort", "argsort_gather") for dtype in ("float32", "int32")
    }
    for c in cells:
        assert c["agree"], c
        assert c["log2"] == 11 and c["dispatched"] in ("merge", "radix"), c
        assert all(t > 0 for t in c["us_a_step"].values()), c
    assert "DISAGREE" not in run.stdout
