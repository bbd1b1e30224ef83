# The examples in examples/ run in-process at small sizes: each main() asserts that its
# jax_mergepath version gives the jnp-only version's results and returns the outcome of every
# check; a mismatch raises AssertionError (tested here with a deliberately broken version).
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import jax.numpy as jnp
import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch):
    """Imports examples/<name>.py by path (with examples/ on sys.path for _common)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))

    def load_example(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load_example


def assert_passed(out: dict) -> None:
    assert out["ok"], out["checks"]
    assert out["checks"] and all(out["checks"].values()), out["checks"]
    assert out["jmp_s_per_call"] > 0 and out["jnp_s_per_call"] > 0
    assert out["speedup"] == pytest.approx(out["jnp_s_per_call"] / out["jmp_s_per_call"])
    assert out["jmp_stage_s"] > 0 and out["jnp_stage_s"] > 0  # the sort / merge stage alone
    assert out["stage_speedup"] == pytest.approx(out["jnp_stage_s"] / out["jmp_stage_s"])


def test_species_energy(load) -> None:
    out = load("species_energy").main(
        ["--size", "small", "--sims", "8", "--cells", "128", "--steps", "8", "--every", "2",
         "--reps", "1", "--show", "2"]
    )
    assert_passed(out)
    assert len(out["best_species"]) == 8


def test_cell_list(load) -> None:
    out = load("cell_list").main(["--size", "small", "--cells", "16", "--steps", "5",
                                  "--reps", "1"])
    assert_passed(out)
    assert out["particles"] == 121  # an 11 x 11 lattice


def test_sorted_stream(load) -> None:
    out = load("sorted_stream").main(["--size", "small", "--capacity", "4096", "--batch", "64",
                                      "--steps", "16", "--reps", "1"])
    assert_passed(out)


def test_a_wrong_result_fails_the_example(load) -> None:
    stream = load("sorted_stream")

    def off_by_one(times, ids, new_times, new_ids):  # right times, ids shifted by one place
        times, ids = stream.jmp.merge_by_key(times, jnp.sort(new_times), ids, new_ids)
        return times, jnp.roll(ids, 1)

    stream.jmp_insert = off_by_one
    with pytest.raises(AssertionError, match="equal jnp's"):
        stream.main(["--capacity", "1024", "--batch", "16", "--steps", "4", "--reps", "1"])


def test_checks_catch_differences(load) -> None:
    common = load("_common")
    checks = common.Checks()
    checks.equal("same", (np.arange(3), {"x": np.ones(2)}), (np.arange(3), {"x": np.ones(2)}))
    with pytest.raises(AssertionError, match="first differences"):
        checks.equal("one element", np.arange(3), np.array([0, 1, 3]))
    with pytest.raises(AssertionError, match="not equal"):
        checks.equal("shape", np.arange(3), np.arange(4))
    checks.close("close", np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]), rtol=1e-6, atol=0)
    with pytest.raises(AssertionError, match="max"):
        checks.close("far", np.array([1.0]), np.array([1.1]), rtol=1e-6, atol=0)
    with pytest.raises(AssertionError, match="why"):
        checks.true("property", False, "why")
    assert checks.results == {"same": True, "one element": False, "shape": False,
                              "close": True, "far": False, "property": False}
    assert not common.result(checks, {})["ok"]
