# Test tiers inside one parametrization: the fast tier (the README's test command, at most a few
# minutes on a 2-core machine) runs the core values, the slow tier (.ci/run runs it too) the rest.
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest


def core_fast(values: Iterable[Any], is_core: Callable[[Any], bool],
              unpack: bool = False) -> list[Any]:
    """The values, each one for which is_core is false marked slow (unpack: each value a tuple of
    several parameters' values, as for parametrize with several names)."""
    def slow(v: Any) -> Any:
        return pytest.param(*v, marks=pytest.mark.slow) if unpack else pytest.param(
            v, marks=pytest.mark.slow)

    return [v if is_core(v) else slow(v) for v in values]
