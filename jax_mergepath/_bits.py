"""Concatenations, gathers and reversals of keys and values that keep every bit: floats move as
unsigned integers of their width (XLA's CPU concatenate and gather of bfloat16 rewrite NaN
payloads, 0x7f81 -> 0x7fc0; XLA:GPU's reverse of float8_e5m2 does too), dtypes narrower than a
byte (int2, int4, float4_e2m1fn...) as uint8 (XLA:CPU aborts on some of their gathers and
concatenations), weak types are kept, and derivatives flow as through `jnp.concatenate` /
`jnp.take_along_axis` / `lax.rev`.
bfloat16's bit casts sit behind optimization barriers: on a host with avx512_bf16 (where LLVM
narrows float to bfloat16 with vcvtneps2bf16, which flushes subnormals) XLA:CPU's program for a
vmapped gather of bfloat16 flushed them. XLA drops the barriers when it compiles; what they
change is where the transposes land (on the uint16 bits, before the cast back), and that
program kept every bit there (docs/performance.md: an observed fix, not a guarantee). The lowest
layer: jax only."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._dtypes import with_weak_type


def bits_dtype(dtype) -> np.dtype | None:
    """The unsigned dtype that carries dtype's bits through data movement (floats: their width;
    anything narrower than a byte: uint8), or None where dtype moves as it is (integers of a
    byte or more, bool, complex)."""
    dt = np.dtype(dtype)
    bits = jax.dtypes.itemsize_bits(dt)
    if bits < 8:
        return np.dtype(np.uint8)
    if jnp.issubdtype(dt, jnp.floating):
        return np.dtype(f"uint{bits}")
    return None


def to_bits(x: jax.Array) -> jax.Array:
    """x as bits_dtype(x.dtype) (x itself where that is None); from_bits inverts it."""
    target = bits_dtype(x.dtype)
    if target is None:
        return x
    bits = jax.dtypes.itemsize_bits(x.dtype)
    narrow = np.dtype(f"uint{bits}")  # (float4_e2m1fn: uint4)
    if x.dtype != narrow:
        # bfloat16: the transposes XLA adds stay on the bits (see the module docstring).
        fence = lax.optimization_barrier if x.dtype == jnp.bfloat16 else (lambda y: y)
        x = fence(lax.bitcast_convert_type(x, narrow))
    return x if narrow == target else x.astype(target)


def from_bits(b: jax.Array, dtype, weak: bool = False) -> jax.Array:
    """The array of dtype whose to_bits is b, weakly typed when `weak`."""
    dt = np.dtype(dtype)
    if bits_dtype(dt) is None:
        return with_weak_type(b, weak)
    narrow = np.dtype(f"uint{jax.dtypes.itemsize_bits(dt)}")
    b = b if b.dtype == narrow else b.astype(narrow)
    if dt != narrow:
        fence = lax.optimization_barrier if dt == jnp.bfloat16 else (lambda y: y)
        b = lax.bitcast_convert_type(fence(b), dt)
    return with_weak_type(b, weak)


def _on_bits(fn: Callable[..., jax.Array], dtype, *arrays: jax.Array) -> jax.Array:
    """fn(*arrays) with arrays of `dtype` seen as their bits (to_bits), weakly typed when every
    array is."""
    weak = all(getattr(x, "weak_type", False) for x in arrays)
    moved = fn(*(to_bits(x) for x in arrays))
    return from_bits(moved, dtype, weak)


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def concatenate_bits(parts: tuple[jax.Array, ...], axis: int) -> jax.Array:
    """`jnp.concatenate(parts, axis)` of arrays of one dtype, bit for bit."""
    return _on_bits(lambda *xs: jnp.concatenate(xs, axis=axis), parts[0].dtype, *parts)


@concatenate_bits.defjvp
def _concatenate_bits_jvp(axis: int, primals, tangents):
    (parts,), (parts_dot,) = primals, tangents
    return concatenate_bits(parts, axis), jnp.concatenate(parts_dot, axis=axis)


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def take_along_bits(src: jax.Array, idx: jax.Array, axis: int) -> jax.Array:
    """`jnp.take_along_axis(src, idx, axis)`, bit for bit (NaN payloads, -0.0 kept)."""
    return _on_bits(lambda x: jnp.take_along_axis(x, idx, axis=axis), src.dtype, src)


@take_along_bits.defjvp
def _take_along_bits_jvp(axis: int, primals, tangents):
    src, idx = primals
    src_dot, _ = tangents
    return take_along_bits(src, idx, axis), jnp.take_along_axis(src_dot, idx, axis=axis)


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def reverse_bits(x: jax.Array, axis: int) -> jax.Array:
    """`lax.rev(x, (axis,))`, bit for bit (NaN payloads, -0.0 kept)."""
    return _on_bits(lambda b: lax.rev(b, (axis,)), x.dtype, x)


@reverse_bits.defjvp
def _reverse_bits_jvp(axis: int, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return reverse_bits(x, axis), lax.rev(x_dot, (axis,))


@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _moveaxis_bits(x: jax.Array, source: int, destination: int) -> jax.Array:
    return _on_bits(lambda b: jnp.moveaxis(b, source, destination), x.dtype, x)


@_moveaxis_bits.defjvp
def _moveaxis_bits_jvp(source: int, destination: int, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return (_moveaxis_bits(x, source, destination),
            jnp.moveaxis(x_dot, source, destination))


def moveaxis_bits(x: jax.Array, source: int, destination: int) -> jax.Array:
    """`jnp.moveaxis(x, source, destination)`, bit for bit (a transpose of the bits: XLA:GPU may
    move narrow floats through a wider type, as it does in its reverse of float8_e5m2); x itself
    where the axis stays."""
    if source % x.ndim == destination % x.ndim:
        return x
    return _moveaxis_bits(x, source, destination)


def gather_along(src: jax.Array, idx: jax.Array, ax: int) -> jax.Array:
    """src[..., idx, ...] along ax, bit for bit: idx is shaped like the keys, src like them with
    optional trailing dimensions (values moved by a sort's or merge's permutation)."""
    extra = src.ndim - idx.ndim
    full_idx = jnp.expand_dims(idx, tuple(range(idx.ndim, idx.ndim + extra)))
    full_idx = jnp.broadcast_to(full_idx, (*idx.shape, *src.shape[idx.ndim :]))
    return take_along_bits(src, full_idx, ax)
