"""The one table of key dtypes: what may be merged or sorted, and how its bits order.

Adding a key dtype on the Python side is one entry here (the native side has its own table in
ffi/include/jax_mergepath/key_types.h and ffi/handlers/common.h).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np


class KeyKind(enum.Enum):
    UNSIGNED = "unsigned"  # bool and unsigned integers: the bits are the order
    SIGNED = "signed"  # two's complement: flip the sign bit
    FLOAT = "float"  # IEEE: NaN last, -0.0 == +0.0 (ordering.h)


class KeyInfo(NamedTuple):
    kind: KeyKind
    bits: int  # storage bits: the width of the order key


KEY_DTYPES: dict[np.dtype, KeyInfo] = {
    np.dtype(np.bool_): KeyInfo(KeyKind.UNSIGNED, 8),
    np.dtype(np.uint8): KeyInfo(KeyKind.UNSIGNED, 8),
    np.dtype(np.uint16): KeyInfo(KeyKind.UNSIGNED, 16),
    np.dtype(np.uint32): KeyInfo(KeyKind.UNSIGNED, 32),
    np.dtype(np.uint64): KeyInfo(KeyKind.UNSIGNED, 64),
    np.dtype(np.int8): KeyInfo(KeyKind.SIGNED, 8),
    np.dtype(np.int16): KeyInfo(KeyKind.SIGNED, 16),
    np.dtype(np.int32): KeyInfo(KeyKind.SIGNED, 32),
    np.dtype(np.int64): KeyInfo(KeyKind.SIGNED, 64),
    np.dtype(jnp.float16): KeyInfo(KeyKind.FLOAT, 16),
    np.dtype(jnp.bfloat16): KeyInfo(KeyKind.FLOAT, 16),
    np.dtype(np.float32): KeyInfo(KeyKind.FLOAT, 32),
    np.dtype(np.float64): KeyInfo(KeyKind.FLOAT, 64),
}


def key_info(dtype) -> KeyInfo | None:
    """The table's entry for dtype, or None when it is not a key dtype."""
    try:
        return KEY_DTYPES.get(np.dtype(dtype))
    except TypeError:
        return None


def supported_names() -> str:
    return ", ".join(sorted(str(d) for d in KEY_DTYPES))
