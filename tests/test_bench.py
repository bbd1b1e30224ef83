# The benchmark CLI (python -m perf.bench, the lab's bench: perf/ at the repository root, not
# in the package) at tiny sizes on the CPU: one subprocess run of both families with --json and
# --plot (the JSON holds every case with positive times, the progress lines go to stderr only, the
# PNG is a PNG), an in-process --quiet run, re-plotting a saved JSON, and the argument-time errors
# of --plot without matplotlib and --plot-from alone. Plot checks skip when matplotlib is not
# installed. About 20 s on 2 cores: the slow tier.
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# perf/ is found at the repository root, appended last so that jax_mergepath stays the installed
# package wherever pytest runs from (perf's own import does the same for `python -m perf.bench`).
sys.path.append(str(ROOT))
from perf.bench import cli, plot  # noqa: E402
from perf.bench.run import main  # noqa: E402

pytestmark = pytest.mark.slow  # the slow tier (32 s of test time on 2 cores)

TINY = ["--quick", "--min-log2", "10", "--max-log2", "10", "--no-torch", "--repeats", "1",
        "--rounds", "1", "--calls", "2", "--min-calls", "1", "--max-batch-s", "0.01"]
# --quick at 2^10: merge 50% / 1% / kv (int32); sort, argsort (int32, float32), presorted,
# sort_by_key, lax_sort x3, one row width, searchsorted 1-D and in rows (two rows each:
# sorted_v=True / False);
# batch: vmapped merges of rows of 32 and 512 a side, and a ragged one;
# topk: one row of 2^10 at k 10 and 1000, rows of 512 at k 8.
N_CASES = 21
N_ROWS = 23
HAS_MPL = importlib.util.find_spec("matplotlib") is not None
needs_mpl = pytest.mark.skipif(not HAS_MPL, reason="needs matplotlib")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One CPU run of both families: (process, results dict, png path or None)."""
    out = tmp_path_factory.mktemp("bench")
    cmd = [sys.executable, "-m", "perf.bench", "--family", "all", *TINY,
           "--json", str(out / "results.json")]
    png = out / "results.png" if HAS_MPL else None
    if png:
        cmd += ["--plot", str(png)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out / "results.json") as fh:
        return proc, json.load(fh), png


def test_json_holds_every_case_with_positive_times(run):
    _, results, _ = run
    rows = results["rows"]
    assert len(rows) == N_ROWS
    assert {r["family"] for r in rows} == {"merge", "batch", "sort", "topk"}
    names = {r["case"] for r in rows}
    for name in ("merge int32 2^10 a=50%", "merge kv int32 2^10 a=50%", "sort float32 2^10",
                 "argsort int32 2^10", "sort int32 2^10 presorted",
                 "searchsorted int32 2^10 in 2^10 sorted_v=False",
                 "vmap merge int32 2^10 as 16 x (32+32)",
                 "ragged vmap merge int32 2^10 as 1 x (512+512)"):
        assert name in names
    for r in rows:
        assert r["status"] == "ok", r
        assert r["n"] == 1 << 10 and r["bytes"] > 0
        assert r["user_s"] > 0 and r["kernel_s"] > 0 and r["gbps"] > 0
        assert r["baselines"] and all(b["user_s"] > 0 for b in r["baselines"])
    meta = results["meta"]
    assert meta["platform"] == "cpu" and meta["copy_bps"] > 0
    assert meta["sizes"]["merge"] == [10]


def test_progress_goes_to_stderr_one_line_per_case(run):
    proc, _, _ = run
    lines = proc.stderr.splitlines()
    pattern = re.compile(rf"\[(\d+)/{N_CASES}\] (.+) \.\.\. \d+\.\d\d s")
    found = [m for m in map(pattern.fullmatch, lines) if m]
    assert [int(m[1]) for m in found] == list(range(1, N_CASES + 1)), proc.stderr
    assert found[0][2] == "merge int32 2^10 a=50%"
    assert "[1/" not in proc.stdout
    assert proc.stdout.startswith("device: ")
    assert "== summary" in proc.stdout


@needs_mpl
def test_plot_is_a_png_and_replots_from_json(run, tmp_path):
    proc, results, png = run
    assert f"plot written to {png}" in proc.stdout
    assert png.read_bytes()[:8] == PNG_MAGIC
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps({**results, "rows": results["rows"][:3]}))  # 3 panels
    again = tmp_path / "again.png"
    assert plot.main([str(saved), str(again)]) == 0
    assert again.read_bytes()[:8] == PNG_MAGIC
    last = next(r for r in results["rows"]
                if r["case"] == "searchsorted int32 2^10 in 2^10 sorted_v=False")
    assert plot.panel_and_x(last) == ("searchsorted int32 2^k in 2^k sorted_v=False", last["n"])
    batch = {"case": "vmap merge int32 2^26 as 8192 x (4096+4096)", "n": 2**26}
    assert plot.panel_and_x(batch) == ("vmap merge int32 2^26, rows of d + d", 4096)


def test_quiet_run_writes_no_progress(capsys):
    assert main(["--family", "merge", *TINY, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "== merge family" in out and "merge kv int32 2^10 a=50%" in out


def test_case_filter_runs_only_matching_cases(tmp_path):
    saved = tmp_path / "results.json"
    assert main(["--family", "sort", *TINY, "--quiet", "--case", "searchsorted",
                 "--case", "presorted", "--json", str(saved)]) == 0
    with open(saved) as fh:
        names = [r["case"] for r in json.load(fh)["rows"]]
    assert names == ["sort int32 2^10 presorted",
                     "searchsorted int32 rows 2^10 as 1 x (1024 + 64) sorted_v=True",
                     "searchsorted int32 rows 2^10 as 1 x (1024 + 64) sorted_v=False",
                     "searchsorted int32 2^10 in 2^10 sorted_v=True",
                     "searchsorted int32 2^10 in 2^10 sorted_v=False"]


def test_plot_without_matplotlib_fails_at_argument_time(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # find_spec: not installed
    with pytest.raises(SystemExit) as exc:
        cli.parse_args(["--plot", "out.png"])
    assert exc.value.code == 2
    assert "pip install matplotlib" in capsys.readouterr().err


def test_plot_from_needs_plot(capsys):
    with pytest.raises(SystemExit):
        cli.parse_args(["--plot-from", "results.json"])
    assert "--plot-from needs --plot" in capsys.readouterr().err
