"""Result checks of a case: integers bit-equal, floats equal as values (any NaN equal to any
NaN), over every output leaf (`check_all`). A check returns mismatch text or None."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def _leaves(x: Any) -> list:
    if isinstance(x, list | tuple):
        return [leaf for item in x for leaf in _leaves(item)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _leaves(x[k])]
    return [x]


def _to_jax(x: Any) -> Any:
    if isinstance(x, jax.Array | np.ndarray):
        return x
    return jnp.from_dlpack(x.contiguous())  # a torch tensor: same device, no copy


def same_values(a: Any, b: Any) -> bool:
    """Equal shapes and values; any NaN equals any NaN (integers: bit-equal)."""
    a, b = _to_jax(a), _to_jax(b)
    if a.shape != b.shape:
        return False
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    return bool(jnp.array_equal(a, b, equal_nan=True))


def check_all(ours: Any, other: Any) -> str | None:
    la, lb = _leaves(ours), _leaves(other)
    if len(la) != len(lb):
        return f"{len(la)} outputs vs {len(lb)}"
    for i, (a, b) in enumerate(zip(la, lb, strict=True)):
        if not same_values(a, b):
            return f"output {i} differs"
    return None
