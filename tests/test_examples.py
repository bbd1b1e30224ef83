# The examples in examples/ run in-process at small sizes: each main() asserts that its
# jax_mergepath version gives the jnp-only version's results and returns the outcome of every
# check; a mismatch raises AssertionError (tested here with a deliberately broken version).
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytestmark = pytest.mark.slow  # the slow tier (26 s of test time on 2 cores)

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


def test_smc_resampling(load) -> None:
    out = load("smc_resampling").main(["--particles", "1024", "--steps", "8", "--reps", "1"])
    assert_passed(out)
    assert out["particles"] == 1024 and out["jnp_search"] == "counts"


@pytest.mark.parametrize("method", ["counts", "repeat", "scan", "scan_unrolled", "sort",
                                    "compare_all"])
def test_smc_searches_pick_the_same_ancestors(load, method: str) -> None:
    smc = load("smc_resampling")
    rng = np.random.default_rng(3)
    n = 257
    w = rng.exponential(size=n) * (rng.random(n) < 0.7)  # many zero weights: never chosen
    w[0] = w[-1] = 0.0
    cdf = np.cumsum(w)
    systematic = cdf * (n / cdf[-1]) - 0.37  # a systematic offset u
    for scaled in (systematic,
                   np.floor(cdf * (n / cdf[-1])),  # values exactly on queries (integers)
                   np.linspace(-0.9, n - 1.5, n)):  # the last queries past every value
        scaled = jnp.asarray(scaled, jnp.float32)
        got = smc.jnp_search(scaled, method=method)
        want = smc.jmp_search(scaled)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        queries = np.arange(n, dtype=np.float32)
        brute = np.minimum(np.sum(np.asarray(scaled)[None, :] < queries[:, None], axis=1), n - 1)
        np.testing.assert_array_equal(np.asarray(want), brute)
    ancestors = np.asarray(smc.jmp_search(jnp.asarray(systematic, jnp.float32)))
    assert np.all(w[ancestors] > 0)  # a particle of weight 0 is never chosen


def test_smc_a_wrong_resampling_fails_the_kalman_check(load) -> None:
    smc = load("smc_resampling")
    smc.cumulative = lambda w: jnp.cumsum(jnp.ones_like(w))  # weights ignored, in both versions
    with pytest.raises(AssertionError, match="Kalman"):
        smc.main(["--particles", "1024", "--steps", "8", "--reps", "1"])


def test_smc_an_off_by_one_search_fails_the_example(load) -> None:
    smc = load("smc_resampling")
    search = smc.jmp_search
    smc.jmp_search = lambda scaled: jnp.minimum(search(scaled) + 1, scaled.shape[0] - 1)
    with pytest.raises(AssertionError, match="equal jnp's"):
        smc.main(["--particles", "512", "--steps", "2", "--reps", "1"])


def test_particle_hashing(load) -> None:
    out = load("particle_hashing").main(["--particles", "4096", "--cell-bits", "3", "--steps",
                                         "4", "--reps", "1"])
    assert_passed(out)
    assert 0 < out["unsorted_pairs"] < 0.5  # moved a little: nearly sorted keys


def test_particle_hashing_spellings_agree(load) -> None:
    ph = load("particle_hashing")
    fields = ph.initial_fields(np.random.default_rng(1), 2000, 2.0**14)
    moved = ph.drift(ph.drift(fields))
    keys = ph.morton(moved)
    want = ph.jnp_stage(keys, moved, how="argsort")
    assert bool(ph.jmp.is_sorted(want[0]))
    for how in ph.JMP_SORTS:
        got = ph.jmp_stage(keys, moved, how=how)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    got = ph.jnp_stage(keys, moved, how="lax_sort")
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_morton_interleaves_bits(load) -> None:
    ph = load("particle_hashing")
    rng = np.random.default_rng(2)
    top = rng.integers(0, 2**ph.HASH_BITS, (3, 50))
    fields = {a: jnp.asarray((top[i] << (32 - ph.HASH_BITS)).astype(np.uint32))
              for i, a in enumerate(ph.AXES)}
    want = sum(((top[i] >> b) & 1) << (3 * b + i) for i in range(3) for b in range(ph.HASH_BITS))
    np.testing.assert_array_equal(np.asarray(ph.morton(fields)), want)
