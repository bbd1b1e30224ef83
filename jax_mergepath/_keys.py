"""Every key dtype jnp.sort takes, mapped at the JAX level onto the kernels' key dtypes
(_dtypes.KEY_DTYPES), so CPU and GPU share the mapping and give the same bits.

Contract: a single-key dtype x has a kernel key `to_kernel(x)` of a kernel dtype whose kernel
order (NaN last, -0.0 == +0.0, ties equal) is jnp's order of x, and which gives x back bit for bit
(`from_kernel`), so a sort or merge of the kernel keys is one of x:
- the kernels' own dtypes: x itself;
- int2 / int4 / uint2 / uint4: the same numbers as int8 / uint8;
- the float8 types and float4_e2m1fn: float16 keys whose low byte holds x's bits (an embedding
  that keeps x's order, its zeros, infinities and NaNs; _NarrowFloat). jnp orders the NaN of the
  "fnuz" types (the negative-zero pattern, 0x80) before every number: XLA's comparison does.
Complex keys are two keys, the real then the imaginary part (jnp's lexicographic order), and
have no kernel key: `order_keys` gives every key dtype's order as unsigned integers (most
significant first) for the multi-key paths (_dispatch.py).

Order keys, the Python twin of ordering.h's order_key: the unsigned order of order_key(k) of a
kernel key k is the package's ascending key order (NaN last, -0.0 == +0.0, every NaN equal); the
tests check it against the native sort on every dtype's edge values. They are used where keys
must be combined before a kernel sees them: lax_sort with several keys packs their order keys
into one unsigned key (pack_order_keys; docs/architecture.md). For integer and bool keys
order_key is one-to-one, so a packed key gives its keys back bit for bit (unpack_order_keys);
float keys are not (-0.0 and +0.0, NaN payloads share order keys).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._dtypes import KEY_DTYPES, KeyKind, key_info

# ---------------------------------------------------------------- the dtypes


def _jnp_dtypes(names: tuple[str, ...]) -> list[np.dtype]:
    """The named dtypes this jax has (newer ones may be missing from older versions)."""
    return [np.dtype(getattr(jnp, n)) for n in names if hasattr(jnp, n)]


# Sub-byte integers: as int8 / uint8, the same numbers.
_SUB_BYTE_INTS: dict[np.dtype, np.dtype] = {
    dt: np.dtype(np.int8 if jnp.issubdtype(dt, jnp.signedinteger) else np.uint8)
    for dt in _jnp_dtypes(("int2", "int4", "uint2", "uint4"))
}
# Floats of 8 bits or fewer that XLA holds (the float6 types it does not: jnp cannot make them).
_NARROW_FLOATS: list[np.dtype] = _jnp_dtypes((
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn",
))  # fmt: skip
_COMPLEX: list[np.dtype] = [np.dtype(np.complex64), np.dtype(np.complex128)]


def _as_dtype(dtype: Any) -> np.dtype | None:
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def is_key_dtype(dtype: Any) -> bool:
    """Whether keys of dtype may be sorted, merged and searched."""
    dt = _as_dtype(dtype)
    return dt is not None and (
        dt in KEY_DTYPES or dt in _SUB_BYTE_INTS or dt in _NARROW_FLOATS or dt in _COMPLEX
    )


def key_dtype_names() -> str:
    """The key dtypes, for error messages."""
    every = [*KEY_DTYPES, *_SUB_BYTE_INTS, *_NARROW_FLOATS, *_COMPLEX]
    return ", ".join(sorted(str(d) for d in every))


def is_complex(dtype: Any) -> bool:
    """Complex keys: two keys (real, imaginary), no kernel key."""
    return np.dtype(dtype) in _COMPLEX


def ties_hold_other_bits(dtype: Any) -> bool:
    """Whether equal keys can differ in bits (-0.0 / +0.0, NaN payloads): every float and complex
    dtype. For the others a sort's ties are identical, so their order is invisible."""
    return bool(jnp.issubdtype(np.dtype(dtype), jnp.inexact))


# ---------------------------------------------------------------- narrow floats


class _NarrowFloat(NamedTuple):
    """How a float of `bits` bits (<= 8) embeds in float16, derived from its values
    (ml_dtypes) and checked at first use: pattern p (a sign bit `sign`, or none) maps to
    - +-0 (the patterns of value 0): float16 +-0;
    - other numbers: (p's sign at bit 15) | p: float16 subnormals ordered as the values are
      (the low byte is p, so negatives order by their magnitude bits, offset by `sign`);
    - +-inf: (sign at bit 15) | 0x7800 | p: finite float16 beyond every embedded number;
    - NaN: 0x7E00 | p, a float16 NaN (NaN last), or, when `nan_first` (the fnuz types, whose
      only NaN is the pattern `sign`: XLA orders it first), float16 -inf, unused otherwise.
    """

    bits: int
    sign: int  # the sign bit's mask; 0 when the dtype has no sign (float8_e8m0fnu)
    zeros: tuple[int, ...]  # patterns of value 0
    infs: tuple[int, ...]
    nan_mag_min: int  # NaN iff the magnitude bits are >= this (when not nan_first)
    nan_first: bool


_F16_SIGN, _F16_INF_BASE, _F16_NAN_BASE, _F16_NEG_INF = 0x8000, 0x7800, 0x7E00, 0xFC00


def _patterns(dtype: np.dtype, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Every bit pattern of dtype (uint16) and its value (float64); ml_dtypes stores a sub-byte
    float in the low bits of one byte."""
    p = np.arange(2**bits, dtype=np.uint8)
    return p.astype(np.uint16), p.view(dtype).astype(np.float64)


@functools.cache
def _narrow_float(dtype: np.dtype) -> _NarrowFloat:
    bits = jax.dtypes.itemsize_bits(dtype)
    p, v = _patterns(dtype, bits)
    top = 1 << (bits - 1)
    sign = top if np.any(np.signbit(v[p >= top]) & ~np.isnan(v[p >= top])) else 0
    mag = p & np.uint16((2**bits - 1) & ~sign)
    nan = np.isnan(v)
    nan_first = bool(sign and np.array_equal(np.nonzero(nan)[0], [sign]))
    nan_mag_min = int(mag[nan].min()) if nan.any() and not nan_first else 2**bits
    spec = _NarrowFloat(
        bits=bits,
        sign=sign,
        zeros=tuple(int(x) for x in p[v == 0]),
        infs=tuple(int(x) for x in p[np.isinf(v)]),
        nan_mag_min=nan_mag_min,
        nan_first=nan_first,
    )
    _check_embedding(dtype, spec, p, v)
    return spec


def _embed(p: Any, spec: _NarrowFloat, xp: Any) -> Any:
    """The float16 bits (uint16) of patterns p (uint16), with numpy or jax.numpy as xp."""
    u16 = xp.uint16
    neg = (p & u16(spec.sign)) != 0 if spec.sign else xp.zeros(p.shape, bool)
    sign16 = xp.where(neg, u16(_F16_SIGN), u16(0))
    out = sign16 | p
    for z in spec.zeros:
        out = xp.where(p == u16(z), sign16, out)
    for i in spec.infs:
        out = xp.where(p == u16(i), sign16 | u16(_F16_INF_BASE) | p, out)
    if spec.nan_first:
        out = xp.where(p == u16(spec.sign), u16(_F16_NEG_INF), out)
    elif spec.nan_mag_min < 2**spec.bits:
        mag = p & u16((2**spec.bits - 1) & ~spec.sign)
        out = xp.where(mag >= u16(spec.nan_mag_min), u16(_F16_NAN_BASE) | p, out)
    return out


def _unembed(f: Any, spec: _NarrowFloat, xp: Any) -> Any:
    """The patterns (uint16) of embedded float16 bits f (uint16): the inverse of _embed."""
    u16 = xp.uint16
    low = f & u16(0xFF)
    neg_zero = spec.sign if spec.sign in spec.zeros else 0
    zero = xp.where((f & u16(_F16_SIGN)) != 0, u16(neg_zero), u16(0))
    out = xp.where((f & u16(0x7FFF)) == 0, zero, low)
    if spec.nan_first:
        out = xp.where(f == u16(_F16_NEG_INF), u16(spec.sign), out)
    return out


def _check_embedding(dtype: np.dtype, spec: _NarrowFloat, p: np.ndarray, v: np.ndarray) -> None:
    """The embedding is one-to-one, inverted by _unembed, and orders as jnp orders dtype (NaN
    last, or first when nan_first; -0.0 == +0.0): else the dtype cannot be supported."""
    f = _embed(p, spec, np)
    as_f16 = f.view(np.float16).astype(np.float64)

    def relations(cls: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(pairwise <, pairwise ==) of keys ordered by class, then value."""
        c, w = cls[:, None], np.where(np.isnan(val), 0.0, val)
        lt = (c < cls[None, :]) | ((c == cls[None, :]) & (w[:, None] < w[None, :]))
        eq = (c == cls[None, :]) & (w[:, None] == w[None, :])
        return lt, eq

    nan = np.isnan(v)
    want = relations(np.where(nan, -1 if spec.nan_first else 1, 0), v)  # jnp's order
    got = relations(np.isnan(as_f16).astype(int), as_f16)  # the float16 kernels' order
    ok = (
        len(np.unique(f)) == len(p)
        and np.array_equal(_unembed(f, spec, np), p)
        and np.array_equal(want[0], got[0])
        and np.array_equal(want[1], got[1])
    )
    if not ok:
        raise TypeError(f"jax_mergepath: keys of dtype {dtype} are not supported")


def _uint_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"uint{jax.dtypes.itemsize_bits(dtype)}")  # (float4_e2m1fn: uint4)


def _embed_narrow(x: jax.Array) -> jax.Array:
    spec = _narrow_float(np.dtype(x.dtype))
    p = lax.bitcast_convert_type(x, _uint_of(x.dtype)).astype(np.uint16)
    return lax.bitcast_convert_type(_embed(p, spec, jnp), np.float16)


def _unembed_narrow(k: jax.Array, dtype: np.dtype) -> jax.Array:
    spec = _narrow_float(dtype)
    p = _unembed(lax.bitcast_convert_type(k, np.uint16), spec, jnp)
    return lax.bitcast_convert_type(p.astype(_uint_of(dtype)), dtype)


# ---------------------------------------------------------------- kernel keys


def _cast_tangent(fn: Callable[[jax.Array], jax.Array]):
    """fn (a bit-level map between float keys) with the tangent cast to the mapped dtype: sorts
    and merges permute keys, so the permuted tangent of a kernel key maps back to the permuted
    tangent of the keys (the derivative of a permutation, as jnp.sort's)."""

    @jax.custom_jvp
    def mapped(x: jax.Array) -> jax.Array:
        return fn(x)

    @mapped.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = fn(x)
        return y, t.astype(y.dtype)

    return mapped


_embed_narrow_jvp = _cast_tangent(_embed_narrow)


@functools.cache
def _unembed_narrow_jvp(dtype: np.dtype):
    return _cast_tangent(functools.partial(_unembed_narrow, dtype=dtype))


def kernel_dtype(dtype: Any) -> np.dtype | None:
    """The kernels' key dtype of keys of dtype (None for complex keys)."""
    dt = np.dtype(dtype)
    if dt in KEY_DTYPES:
        return dt
    if dt in _SUB_BYTE_INTS:
        return _SUB_BYTE_INTS[dt]
    if dt in _NARROW_FLOATS:
        return np.dtype(np.float16)
    return None


def to_kernel(x: jax.Array) -> jax.Array:
    """The kernel key of single-key x (module docstring)."""
    dt = np.dtype(x.dtype)
    if dt in KEY_DTYPES:
        return x
    if dt in _SUB_BYTE_INTS:
        return x.astype(_SUB_BYTE_INTS[dt])
    assert dt in _NARROW_FLOATS, dt
    return _embed_narrow_jvp(x)


def from_kernel(k: jax.Array, dtype: Any) -> jax.Array:
    """x back from its kernel key k (any permutation of to_kernel(x)), bit for bit."""
    dt = np.dtype(dtype)
    if dt in KEY_DTYPES:
        return k
    if dt in _SUB_BYTE_INTS:
        return k.astype(dt)
    return _unembed_narrow_jvp(dt)(k)


def kernel_keys(x: jax.Array) -> list[jax.Array]:
    """x as kernel keys, most significant first: [real, imaginary] for complex, else one."""
    if is_complex(x.dtype):
        return [lax.real(x), lax.imag(x)]
    return [to_kernel(x)]


def order_keys(x: jax.Array, descending: bool = False) -> list[jax.Array]:
    """Unsigned integers whose lexicographic order (first most significant) is x's key order,
    reversed (every key complemented) when descending; equal keys stay equal."""
    keys = [order_key(k) for k in kernel_keys(x)]
    return [~k for k in keys] if descending else keys


# ---------------------------------------------------------------- order keys of kernel keys

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
