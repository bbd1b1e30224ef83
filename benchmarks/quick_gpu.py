"""A spot check of the sort family on a GPU: for each case, results are checked against the JAX
baseline, then the user-visible time (wall time per call of 20 back-to-back jitted calls,
blocked once) of ours and of the baseline is printed. The full benchmark, with kernel times,
copy rates and CUB, is `python -m jax_mergepath.bench`.

    python3 benchmarks/quick_gpu.py      # x64 on: argsort baselines return int64 indices
"""

from __future__ import annotations

import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import jax_mergepath as jmp


def wall_us(f: Callable, *args, reps: int = 20) -> float:
    jax.block_until_ready(f(*args))
    jax.block_until_ready(f(*args))
    start = time.perf_counter()
    outs = [f(*args) for _ in range(reps)]
    jax.block_until_ready(outs)
    return (time.perf_counter() - start) / reps * 1e6


def row(name: str, ours: Callable, base: Callable, *args) -> None:
    o, b = jax.jit(ours), jax.jit(base)
    got, want = jax.tree.leaves(o(*args)), jax.tree.leaves(b(*args))
    ok = all(
        np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)
        for x, y in zip(got, want, strict=True)
    )
    t_ours, t_base = wall_us(o, *args), wall_us(b, *args)
    print(
        f"{name:<40} ours {t_ours:9.1f} us  base {t_base:9.1f} us  "
        f"speedup {t_base / t_ours:6.2f}x  ok={ok}",
        flush=True,
    )


def keys(n: int, dtype, seed: int = 0) -> jax.Array:
    k = jax.random.key(seed)
    if jnp.issubdtype(dtype, jnp.floating):
        return jax.random.normal(k, (n,), jnp.float64).astype(dtype)
    return jax.random.randint(k, (n,), -(2**30), 2**30, dtype)


def lax_sort_five(a, p, i):
    out = jax.lax.sort((a, p[:, 0], p[:, 1], p[:, 2], i), num_keys=1)
    return out[0], (jnp.stack(out[1:4], -1), out[4])


def argsort_gathers(a, p, i):
    perm = jnp.argsort(a, stable=True)
    return a[perm], (p[perm], i[perm])


def main() -> None:
    n = 1 << 24
    for dt in (jnp.float32, jnp.int64, jnp.float64, jnp.int32):
        x = keys(n, dt)
        name = np.dtype(dt).name
        row(f"argsort {name} 2^24", jmp.argsort,
            lambda z: jnp.argsort(z, stable=True).astype(jnp.int32), x)
        row(f"sort {name} 2^24", jmp.sort, jnp.sort, x)
    x = keys(1 << 27, jnp.int32)
    row("sort int32 2^27", jmp.sort, jnp.sort, x)
    row("sort int32 2^27 presorted", jmp.sort, jnp.sort, jnp.sort(x))
    for d in (64, 512, 4096):
        row(f"row sort int32 2^26 rows of {d}", jmp.sort, lambda z: jnp.sort(z, axis=-1),
            x[: 1 << 26].reshape(-1, d))
    kf = keys(n, jnp.float32)
    pos = jax.random.normal(jax.random.key(1), (n, 3), jnp.float32)
    ids = jnp.arange(n, dtype=jnp.int32)
    ours = lambda a, p, i: jmp.sort_by_key(a, (p, i))  # noqa: E731
    row("sort_by_key f32 + (n,3) f32 + i32 2^24", ours, lax_sort_five, kf, pos, ids)
    row("  vs argsort+gather", ours, argsort_gathers, kf, pos, ids)
    ki = jax.random.randint(jax.random.key(2), (n,), 0, 1000, jnp.int32)
    row("lax_sort num_keys=2 i32+f32+i32 2^24",
        lambda a, b, c: jmp.lax_sort((a, b, c), num_keys=2),
        lambda a, b, c: jax.lax.sort((a, b, c), num_keys=2), ki, kf, ids)
    a = jnp.sort(jax.random.randint(jax.random.key(3), (1 << 23,), 0, 2**30, jnp.int32))
    q = jnp.sort(jax.random.randint(jax.random.key(4), (1 << 23,), 0, 2**30, jnp.int32))
    row("searchsorted sorted_v 2^23 in 2^23", lambda a, q: jmp.searchsorted(a, q, sorted_v=True),
        lambda a, q: jnp.searchsorted(a, q, method="sort").astype(jnp.int32), a, q)
    row("searchsorted binary 2^23 in 2^23", lambda a, q: jmp.searchsorted(a, q),
        lambda a, q: jnp.searchsorted(a, q).astype(jnp.int32), a, q)


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    main()
