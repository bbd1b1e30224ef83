# Reference implementations of the selection family (top_k, partition), independent of
# jax_mergepath: XLA's top_k order as unsigned integers computed in numpy from the bits, the
# first k of every row by (order key descending, index ascending), and what a valid partition
# is (in the sorts' order: NaN last, -0.0 == +0.0, integers as numbers).
from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from reference import order_key, to_bits

_FNUZ = {"float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz"}


def _jnp_dtypes(names):
    return [np.dtype(getattr(jnp, n)) for n in names if hasattr(jnp, n)]


# Dtypes whose lax.top_k result is the contract's (every bit pattern checked against it here):
# bool, the integers, the IEEE floats, and the float8 types XLA orders by their bits.
LAX_DTYPES = [np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
)] + _jnp_dtypes(("float8_e4m3fn", "float8_e8m0fnu", "float8_e4m3fnuz", "float8_e4m3b11fnuz"))
# Dtypes where lax.top_k differs (rewrites NaNs, misorders subnormals) or fails (sub-byte).
OTHER_DTYPES = _jnp_dtypes((
    "float8_e3m4", "float8_e4m3", "float8_e5m2", "float8_e5m2fnuz",
    "int2", "int4", "uint2", "uint4", "float4_e2m1fn",
))


@functools.cache
def lax_flushes_subnormals(dtype: Any) -> bool:
    """Whether lax.top_k on jax's default device compares `dtype`'s subnormals as zeros, so its
    result is not the contract's where they occur: XLA:CPU does for bfloat16 on a host whose
    bfloat16 arithmetic flushes them (AVX512-BF16)."""
    dt = np.dtype(jax.dtypes.canonicalize_dtype(dtype))  # (float64 is float32 without x64)
    if not jnp.issubdtype(dt, jnp.floating) or jax.dtypes.itemsize_bits(dt) < 8:
        return False
    x = jnp.asarray(np.array([0, 1], f"u{dt.itemsize}").view(dt))  # +0.0, the least subnormal
    return int(jax.lax.top_k(x, 1)[1][0]) == 0


def has_subnormals(x: Any) -> bool:
    """Whether a float array holds a subnormal."""
    x = np.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating) or jax.dtypes.itemsize_bits(x.dtype) < 8:
        return False
    tiny = float(ml_dtypes.finfo(x.dtype).smallest_normal)
    magnitude = np.abs(x.astype(np.float64))
    return bool(np.any((magnitude > 0) & (magnitude < tiny)))


def _bits_of(x: np.ndarray) -> tuple[np.ndarray, int]:
    """(the bit pattern as uint64, its width) of a float of any width (float4: its 4 bits)."""
    bits = jax.dtypes.itemsize_bits(x.dtype)
    if bits < 8:
        p = np.asarray(jax.lax.bitcast_convert_type(jnp.asarray(x), jnp.dtype(f"uint{bits}")))
        return p.astype(np.uint64), bits
    return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64), bits


def total_order_key(x: Any) -> np.ndarray:
    """uint64 keys whose order is XLA's top_k order of x's keys (the contract's): unsigned ints
    and bool as they are, signed ints as numbers, floats by the total order of their bits (negative
    ones' bits flipped, the others' sign bit), float8_e8m0fnu by its bits, the fnuz types' NaN
    below everything."""
    x = np.asarray(x)
    dt = x.dtype
    if dt == np.bool_ or dt.kind == "u":
        return x.astype(np.uint64)
    if not jnp.issubdtype(dt, jnp.floating):  # signed, sub-byte included
        return (x.astype(np.int64).view(np.uint64)) ^ np.uint64(1 << 63)
    b, width = _bits_of(x)
    if dt.name == "float8_e8m0fnu":
        return b
    mask = np.uint64((1 << width) - 1)
    sign = np.uint64(1 << (width - 1))
    key = np.where((b & sign) != 0, (~b) & mask, b ^ sign)
    if dt.name in _FNUZ:  # the NaN (pattern `sign`, key sign - 1) below every key
        key = np.where(b == sign, np.uint64(0), np.where(key < sign - 1, key + 1, key))
    return key


def ref_top_k(x: Any, k: int, axis: int = -1, largest: bool = True):
    """(values, int32 indices) of the k first of every row along axis: order key descending
    (ascending when not largest), index ascending."""
    x = np.asarray(x)
    xl = np.moveaxis(x, axis, -1)
    key = total_order_key(xl)
    key = ~key if largest else key
    n = xl.shape[-1]
    idx = np.broadcast_to(np.arange(n), xl.shape)
    flat_key = key.reshape(-1, n)
    flat_idx = idx.reshape(-1, n)
    order = np.stack([np.lexsort((i, kk)) for kk, i in zip(flat_key, flat_idx, strict=True)]
                     ) if flat_key.shape[0] else np.zeros((0, n), np.int64)
    order = order.reshape(xl.shape)[..., :k].astype(np.int32)
    values = np.take_along_axis(xl, order, -1)
    return np.moveaxis(values, -1, axis), np.moveaxis(order, -1, axis)


def sorts_key(x: Any) -> np.ndarray:
    """Keys in the sorts' order (NaN last, -0.0 == +0.0; integers as numbers): what a valid
    partition is judged by."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.int64)
    if x.dtype.kind == "u":  # (as uint64: uint64 keys past 2**63 stay numbers)
        return x.astype(np.uint64)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x.astype(np.int64)
    return order_key(x).astype(np.uint64)


def is_valid_partition(x: Any, out: Any, kth: int, axis: int = -1) -> bool:
    """out is x rearranged along axis (bit for bit) with, in every row, the entry a full sort puts
    at kth there, nothing after it smaller and nothing before it larger."""
    x, out = np.moveaxis(np.asarray(x), axis, -1), np.moveaxis(np.asarray(out), axis, -1)
    if x.shape != out.shape:
        return False
    if not np.array_equal(np.sort(to_bits(x), -1), np.sort(to_bits(out), -1)):
        return False
    kx, ko = sorts_key(x), sorts_key(out)
    pivot = np.sort(kx, -1)[..., kth]
    return bool(
        np.all(ko[..., kth] == pivot)
        and np.all(ko[..., :kth] <= pivot[..., None])
        and np.all(ko[..., kth + 1 :] >= pivot[..., None])
    )


def in_partition_layout(out: Any, kth: int, axis: int = -1) -> bool:
    """out's rows are in jnp.partition's layout: the kth + 1 smallest ascending, the rest
    descending, in XLA's top_k order (jnp negates the keys and calls lax.top_k). (XLA:CPU on a
    host whose bfloat16 arithmetic flushes subnormals, AVX512-BF16, compares them as zeros:
    there jnp.partition ties them with the zeros, in index order, and its layout is not this.)"""
    key = total_order_key(np.moveaxis(np.asarray(out), axis, -1))
    bottom, rest = key[..., : kth + 1], key[..., kth + 1 :]
    return bool(np.all(bottom[..., 1:] >= bottom[..., :-1]) and
                np.all(rest[..., 1:] <= rest[..., :-1]))


def every_pattern(dtype: Any) -> np.ndarray:
    """Every bit pattern of a dtype of 8 bits or fewer, in pattern order."""
    dt = np.dtype(dtype)
    bits = jax.dtypes.itemsize_bits(dt)
    p = np.arange(2**bits, dtype=np.uint8)
    if bits == 8:
        return p.view(dt)
    return np.asarray(jax.lax.bitcast_convert_type(jnp.asarray(p).astype(f"uint{bits}"), dt))


def assert_values_match_lax(got: Any, lax_values: Any, what: str = "values vs lax.top_k") -> None:
    """Our top_k values against lax.top_k's, bit for bit, but the NaN payloads of bfloat16 on a
    GPU: XLA:GPU's bfloat16 top_k rewrites them (0x7fff / 0xffff; seen on an H200 with jax
    0.11.2), ours keep the keys' bits (checked against the CPU and the reference)."""
    from reference import assert_bits_equal

    got, want = np.asarray(got), np.asarray(lax_values)
    if got.dtype == np.dtype(jnp.bfloat16) and jax.default_backend() == "gpu":
        both = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
        got = np.where(both, np.zeros_like(got), got)
        want = np.where(both, np.zeros_like(want), want)
    assert_bits_equal(got, want, what)
