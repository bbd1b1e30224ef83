"""Top-k of rows along the last axis, for every key dtype: how each dtype reaches topk_p
(_select_primitive.py) and comes back bit for bit.

Contract: `top_k_rows(x, k, largest)` returns, for every row of x (*B, L), its k keys first in
XLA's top_k order (larger first, or smaller first, ties by lower index; floats by the total
order of their bits: +NaN > +inf > ... > +0.0 > -0.0 > ... > -inf > -NaN) and their int32
indices. The dtypes:
- bool, integers of 8 to 64 bits, float16 / bfloat16 / float32 / float64: the kernels order
  their bits themselves (topk.h key classes) and return their bits: lax.top_k's results;
- int2 / int4 / uint2 / uint4: the same numbers as int8 / uint8 (lax.top_k fails on them);
- the float8 types with a sign bit and no "fnuz" NaN (e3m4, e4m3, e4m3fn, e5m2): sign-magnitude
  bits, as the wider floats, every NaN payload and sign kept (XLA's top_k converts them to a wider
  float first, which orders their NaNs as one and rewrites their payloads);
- float8_e8m0fnu: its bits are its order (no sign; NaN 0xff largest), as lax.top_k;
- the "fnuz" float8 types (e4m3fnuz, e4m3b11fnuz, e5m2fnuz): their only NaN (the negative-zero
  pattern) is the smallest key, as lax.top_k orders it; the rest sign-magnitude (XLA:CPU also
  misorders e5m2fnuz subnormals; we do not);
- float4_e2m1fn: sign-magnitude bits (lax.top_k fails on it);
the last two through an order key computed in jnp (uint8), their values gathered at the indices.
`partition_keys` gives the partitions' keys: unsigned keys made from the bits alone, NaNs last.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._bits import take_along_bits, to_bits
from jax_mergepath._dtypes import INT32_LIMIT, with_weak_type
from jax_mergepath._keys import _NARROW_FLOATS, _SUB_BYTE_INTS, _narrow_float
from jax_mergepath._select_primitive import KeyClass, _by_xla, forced_route_value, topk_p


class _Way(NamedTuple):
    operand: jax.Array  # what topk_p selects on
    key_class: KeyClass
    gather: bool  # the values are gathered from x at the indices (else the kernel's, mapped back)


def _narrow_float_key(x: jax.Array) -> jax.Array:
    """uint8 order keys of a float of 8 bits or fewer whose bits do not order as sign-magnitude
    bytes: sign-magnitude over its own width, the fnuz NaN (the sign pattern) below every key."""
    spec = _narrow_float(np.dtype(x.dtype))
    p = to_bits(x)  # uint8, the pattern in the low bits
    ones = np.uint8(2**spec.bits - 1)
    sign = np.uint8(spec.sign)
    key = p ^ jnp.where((p & sign) != 0, ones, sign)
    if spec.nan_first:  # the NaN's sign-magnitude key is sign - 1: it moves below 0
        nan_key = np.uint8(spec.sign - 1)
        key = jnp.where(p == sign, np.uint8(0), jnp.where(key < nan_key, key + np.uint8(1), key))
    return key


def _way(x: jax.Array) -> _Way:
    dt = np.dtype(x.dtype)
    if dt in _SUB_BYTE_INTS:
        kernel = _SUB_BYTE_INTS[dt]
        cls = KeyClass.SIGNED if jnp.issubdtype(kernel, jnp.signedinteger) else KeyClass.UNSIGNED
        return _Way(x.astype(kernel), cls, False)
    if dt in _NARROW_FLOATS:
        spec = _narrow_float(dt)
        if spec.bits == 8 and not spec.nan_first:
            cls = KeyClass.FLOAT if spec.sign else KeyClass.UNSIGNED
            return _Way(x, cls, False)
        return _Way(_narrow_float_key(x), KeyClass.UNSIGNED, True)
    if dt == np.bool_ or jnp.issubdtype(dt, jnp.unsignedinteger):
        return _Way(x, KeyClass.UNSIGNED, False)
    if jnp.issubdtype(dt, jnp.signedinteger):
        return _Way(x, KeyClass.SIGNED, False)
    assert jnp.issubdtype(dt, jnp.floating), dt
    return _Way(x, KeyClass.FLOAT, False)


def top_k_rows(x: jax.Array, k: int, *, largest: bool = True) -> tuple[jax.Array, jax.Array]:
    """(values (*B, k) of x's dtype and weak type, int32 indices (*B, k)): the module docstring's
    top k of every row of x (*B, L), 0 <= k <= L. A row of 2**31 keys (int32 indices still hold
    its positions, the kernels' counts not) runs as XLA's top_k of the order keys."""
    if k == 0:  # (slices of x, not constants: under jit they live where x does)
        none = lax.slice_in_dim(x, 0, 0, axis=x.ndim - 1)
        return none, lax.slice_in_dim(to_bits(x), 0, 0, axis=x.ndim - 1).astype(np.int32)
    way = _way(x)
    route, strategy = forced_route_value()
    params = {"k": k, "largest": bool(largest), "key_class": int(way.key_class),
              "route": route, "strategy": strategy}
    length = x.shape[-1]
    if isinstance(length, int) and length >= INT32_LIMIT:
        values, idx = _by_xla(way.operand, k=k, largest=bool(largest), key_class=way.key_class)
    else:
        values, idx = topk_p.bind(way.operand, **params)
    if way.gather:
        return take_along_bits(x, idx, -1), idx
    if values.dtype != x.dtype:  # (sub-byte integers: the same numbers)
        values = values.astype(x.dtype)
    return with_weak_type(values, x.weak_type), idx


def _nan_patterns(dt: np.dtype) -> tuple[int, int] | None:
    """(bits, the smallest NaN magnitude) of a float dtype whose NaNs come in both signs, every
    magnitude from that one up a NaN (the IEEE floats, the float8 types like them), else None
    (non-floats, float8_e8m0fnu, the fnuz types whose one NaN jnp orders first, float4_e2m1fn)."""
    if not jnp.issubdtype(dt, jnp.floating):
        return None
    if dt in _NARROW_FLOATS:
        spec = _narrow_float(dt)
        if spec.nan_first or not spec.sign or spec.nan_mag_min >= 2**spec.bits:
            return None
        return spec.bits, spec.nan_mag_min
    info = jnp.finfo(dt)
    infinity = ((1 << int(info.nexp)) - 1) << int(info.nmant)
    return jax.dtypes.itemsize_bits(dt), infinity + 1


def partition_keys(x: jax.Array, kth: int) -> jax.Array | None:
    """Unsigned keys of x's width (*B, L) whose top_k order (KeyClass.UNSIGNED) is the partition's
    at kth, or None where x's own order is it (x holds no negative NaN: _nan_patterns' None).
    Integer operations on the bits alone (no float operation: XLA may rewrite a NaN's bits in
    one). A row takes XLA's total order (KeyClass.FLOAT's order key u: jnp's result, negative
    NaNs first) where that partitions it: every entry from kth on a positive NaN, or every entry
    a NaN; the others u - N (mod 2**bits), N the negative NaNs' count of order keys (exactly the
    u < N): the same order with the negative NaNs moved past the positive ones, so NaNs are last
    whatever their sign and the keys stay a bijection of the bits (equal keys, equal bits: the
    bottom and the top of a partition agree on its ties)."""
    spec = _nan_patterns(np.dtype(x.dtype))
    if spec is None:
        return None
    bits, nan_min = spec
    b = to_bits(x)  # unsigned of the width (8-bit floats: uint8)
    t = b.dtype.type
    sign = 1 << (bits - 1)
    u = b ^ jnp.where(b >= t(sign), t((1 << bits) - 1), t(sign))
    negative_nans = sign - nan_min  # (their order keys: 0 .. negative_nans - 1)
    positive_nan = u >= t(sign | nan_min)
    nan = positive_nan | (u < t(negative_nans))
    n = x.shape[-1]
    positive = jnp.sum(positive_nan, axis=-1, keepdims=True, dtype=np.int32)
    as_jnp = (kth >= n - positive) | jnp.all(nan, axis=-1, keepdims=True)
    return jnp.where(as_jnp, u, u - t(negative_nans))
