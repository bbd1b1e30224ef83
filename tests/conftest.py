# Shared pytest setup for the jax_mergepath suite: 64-bit dtypes on, a per-test seeded `rng`
# fixture, the `requires_gpu` marker (declared in pyproject.toml; tests carrying it skip unless
# jax's default device is a GPU, so one suite runs on whatever JAX_PLATFORMS gives), the test
# tiers (SLOW_FILES: the `slow` marker), and jax's caches dropped after each module.
from __future__ import annotations

import zlib

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)


def has_gpu() -> bool:
    """True when jax's default device is a GPU."""
    try:
        return jax.devices()[0].platform == "gpu"
    except RuntimeError:
        return False


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires_gpu: runs only when jax.devices()[0] is a GPU (skips otherwise)"
    )


# The fast tier (the README's test command, `-m "not slow"`) is every file not listed here:
# one test file a function family at its core plus the argument, export, tuning and docstring
# checks, about 3 minutes on 2 cores. These files are the slow tier, which `.ci/run` runs after
# it (seconds of test time each, measured on 2 cores: docs/extending.md "Tests").
SLOW_FILES = frozenset({
    "test_bench.py",  # 32 s
    "test_dropin_results.py",  # 165 s
    "test_dropin_together.py",  # 98 s
    "test_examples.py",  # 26 s
    "test_jax_compat.py",  # 98 s
    "test_lax_sort.py",  # 46 s
    "test_merge.py",  # 126 s
    "test_merge_dtypes.py",  # 49 s
    "test_merge_transforms.py",  # 28 s
    "test_merge_unsorted.py",  # 23 s
    "test_sort_dtypes.py",  # 26 s
    "test_sort_transforms.py",  # 21 s
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    if any(item.get_closest_marker("requires_gpu") for item in items) and not has_gpu():
        skip = pytest.mark.skip(reason="needs a GPU as jax's default device")
        for item in items:
            if item.get_closest_marker("requires_gpu"):
                item.add_marker(skip)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A numpy Generator seeded from the test's id: fresh data per test, reproducible per run."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drops jax's caches of traced and compiled programs after each test module: a module's
    programs are not reused by the next, and the whole suite in one process otherwise grows
    past 5 GB of host memory."""
    yield
    jax.clear_caches()
