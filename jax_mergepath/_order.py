"""The key order as unsigned integers, in jnp: the Python twin of ordering.h's order_key.

Used where keys must be combined before a kernel sees them: lax_sort with several keys packs
their order keys into one unsigned key (docs/architecture.md). Contract, as in ordering.h: the
unsigned order of order_key(x) is the package's ascending key order (NaN last, -0.0 == +0.0, every
NaN equal); the tests check it against the native sort on every dtype's edge values. For integer and
bool keys order_key is one-to-one, so a packed key gives its keys back bit for bit
(unpack_order_keys); float keys are not (-0.0 and +0.0, NaN payloads share order keys).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._dtypes import KeyKind, key_info

_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def unsigned_dtype(bits: int) -> np.dtype:
    return np.dtype(_UNSIGNED[bits])


def order_key(x: jax.Array) -> jax.Array:
    """Unsigned integers of x's width whose order is x's ascending key order."""
    info = key_info(x.dtype)
    assert info is not None, x.dtype
    udt = unsigned_dtype(info.bits)
    if x.dtype == np.bool_:
        return x.astype(udt)
    bits = lax.bitcast_convert_type(x, udt)
    sign = udt.type(1 << (info.bits - 1))
    if info.kind == KeyKind.UNSIGNED:
        return bits
    if info.kind == KeyKind.SIGNED:
        return bits ^ sign
    inf_bits = lax.bitcast_convert_type(jnp.array(np.inf, x.dtype), udt)
    magnitude = bits & ~sign
    flipped = jnp.where(bits & sign, ~bits, bits | sign)  # negatives: every bit; others: the sign
    key = jnp.where(magnitude == 0, sign, flipped)  # -0.0 == +0.0
    return jnp.where(magnitude > inf_bits, udt.type(~udt.type(0)), key)  # every NaN last


def pack_order_keys(keys: list[jax.Array]) -> jax.Array:
    """One unsigned key whose order is the lexicographic order of `keys` (most significant
    first); their order-key widths must sum to at most 64 bits."""
    widths = [key_info(k.dtype).bits for k in keys]  # type: ignore[union-attr]
    total = sum(widths)
    out_bits = next(b for b in (8, 16, 32, 64) if b >= total)
    udt = unsigned_dtype(out_bits)
    packed = jnp.zeros(keys[0].shape, udt)
    for k, w in zip(keys, widths, strict=True):
        packed = (packed << udt.type(w)) if w < out_bits else packed
        packed = packed | order_key(k).astype(udt)
    return packed


def is_invertible(dtype) -> bool:
    """Whether order_key of this dtype is one-to-one (integers and bool: no float)."""
    info = key_info(dtype)
    return info is not None and info.kind != KeyKind.FLOAT


def unpack_order_keys(packed: jax.Array, dtypes: list[np.dtype]) -> list[jax.Array]:
    """The keys that pack_order_keys packed into `packed`, for keys of invertible dtypes
    (is_invertible): the inverse of pack_order_keys, bit for bit."""
    widths = [key_info(dt).bits for dt in dtypes]  # type: ignore[union-attr]
    keys: list[jax.Array] = []
    shift = 0
    for dt, w in zip(reversed(dtypes), reversed(widths), strict=True):
        udt = unsigned_dtype(w)
        field = (packed >> packed.dtype.type(shift)).astype(udt)  # the low w bits
        shift += w
        if dt == np.bool_:
            keys.append(field != 0)
        elif key_info(dt).kind == KeyKind.SIGNED:  # type: ignore[union-attr]
            keys.append(lax.bitcast_convert_type(field ^ udt.type(1 << (w - 1)), dt))
        else:
            keys.append(field)
    return keys[::-1]


def pack_groups(keys: list[jax.Array], max_bits: int) -> list[list[int]]:
    """Indices of `keys` cut into consecutive groups of at most max_bits order-key bits each
    (one key per group at least), most significant first."""
    groups: list[list[int]] = []
    used = max_bits
    for i, k in enumerate(keys):
        w = key_info(k.dtype).bits  # type: ignore[union-attr]
        if used + w > max_bits:
            groups.append([])
            used = 0
        groups[-1].append(i)
        used += w
    return groups
