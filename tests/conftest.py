# Shared pytest setup for the jax_mergepath suite: 64-bit dtypes on, a per-test seeded `rng`
# fixture, the `requires_gpu` marker (declared in pyproject.toml; tests carrying it skip unless
# jax's default device is a GPU, so one suite runs on whatever JAX_PLATFORMS gives), the test
# tiers (every test file declares one, TIERS; collection fails on a file without), and jax's
# caches dropped after each module.
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


# The tiers (docs/extending.md "Tests"): every test file says which it is in, by a module-level
# `pytestmark` holding exactly one of these markers (declared in pyproject.toml):
# - fast: the README's test command, `pytest -n 2 -m "not slow"` (one file a function family at
#   its core plus the argument, export, tuning and docstring checks: about 90 s with 2 xdist
#   workers on 2 cores, 2 minutes in one process; a test inside may carry `slow` itself);
# - slow: the full tier, which `.ci/run` runs after it (`-m slow`);
# - requires_gpu: GPU-only files, skipped without a GPU; `python tests/gpu_suite.py` runs them
#   with every other `requires_gpu` test on a GPU machine.
TIERS = ("fast", "slow", "requires_gpu")


def _file_tiers(module) -> list[str]:
    marks = getattr(module, "pytestmark", [])
    marks = marks if isinstance(marks, list | tuple) else [marks]
    return [m.name for m in marks if m.name in TIERS]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    untiered = sorted({
        f"{item.path.name} (pytestmark tiers: {_file_tiers(item.module) or 'none'})"
        for item in items
        if isinstance(item, pytest.Function) and len(_file_tiers(item.module)) != 1
    })
    if untiered:  # (a usage error: the whole run fails, so CI fails)
        raise pytest.UsageError(
            "every test file must declare exactly one tier, a module-level pytestmark of "
            f"pytest.mark.fast, .slow or .requires_gpu (tests/conftest.py TIERS): {untiered}"
        )
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
