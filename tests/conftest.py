# Shared pytest setup for the jax_mergepath suite: 64-bit dtypes on, a per-test seeded `rng`
# fixture, and the `requires_gpu` marker (declared in pyproject.toml; tests carrying it skip
# unless jax's default device is a GPU, so one suite runs on whatever JAX_PLATFORMS gives).
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
