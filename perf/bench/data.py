"""Benchmark data and small helpers of the case builders: random keys over a dtype's range,
sorted keys, deterministic PRNG keys per case, the x64 gate, dtype names, and the stable
jnp.argsort baseline with int32 indices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def random_keys(key: jax.Array, n: int | tuple, dtype) -> jax.Array:
    """Random keys over the dtype's whole range (ints) or standard normal (floats; bfloat16 and
    the float8 types too, which numpy's issubdtype does not call floating: they were random
    bits, NaNs of every payload and sign among them)."""
    shape = (n,) if isinstance(n, int) else n
    dtype = np.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.floating):
        return jax.random.normal(key, shape, dtype)
    bits = jax.random.bits(key, shape, np.dtype(f"uint{8 * dtype.itemsize}"))
    return lax.bitcast_convert_type(bits, dtype)


def sorted_keys(key: jax.Array, n: int | tuple, dtype) -> jax.Array:
    """Random keys (half the integer range, or standard normal) sorted along the last axis."""
    shape = (n,) if isinstance(n, int) else n
    if jnp.issubdtype(dtype, jnp.floating):
        x = jax.random.normal(key, shape, dtype)
    else:
        info = jnp.iinfo(dtype)
        x = jax.random.randint(key, shape, info.min // 2, info.max // 2, dtype)
    return jnp.sort(x, axis=-1)


def prng(*parts: int) -> jax.Array:
    """A PRNG key derived from the parts (the same parts, the same data)."""
    return jax.random.key(hash(parts) & 0x7FFFFFFF)


def x64_ok(dtype) -> bool:
    return np.dtype(dtype).itemsize < 8 or bool(jax.config.jax_enable_x64)


def dname(dtype) -> str:
    return np.dtype(dtype).name


def jnp_argsort_stable(x: jax.Array) -> jax.Array:
    """jnp.argsort(x, stable=True) with int32 indices (its default without jax_enable_x64)."""
    try:
        return jnp.argsort(x, stable=True, dtype=jnp.int32)
    except TypeError:  # an older jnp.argsort without dtype=
        iota = lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
        return lax.sort_key_val(x, iota, is_stable=True)[1]
