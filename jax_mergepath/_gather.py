"""Concatenations and gathers of keys and values that keep every bit: floats move as unsigned
integers of their width (XLA's CPU concatenate and gather of bfloat16 rewrite NaN payloads,
0x7f81 -> 0x7fc0), and derivatives flow as through `jnp.concatenate` / `jnp.take_along_axis`.
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
from jax import lax


def _on_bits(fn: Callable[..., jax.Array], dtype, *arrays: jax.Array) -> jax.Array:
    """fn(*arrays) with float arrays of `dtype` seen as unsigned integers of their width."""
    if not jnp.issubdtype(dtype, jnp.floating):
        return fn(*arrays)
    uint = jnp.dtype(f"uint{jnp.finfo(dtype).bits}")  # (float4_e2m1fn: uint4, not uint8)
    # bfloat16: the transposes XLA adds stay on the bits (see the module docstring).
    fence = lax.optimization_barrier if jnp.dtype(dtype) == jnp.bfloat16 else (lambda x: x)
    moved = fn(*(fence(lax.bitcast_convert_type(x, uint)) for x in arrays))
    return lax.bitcast_convert_type(fence(moved), dtype)


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
