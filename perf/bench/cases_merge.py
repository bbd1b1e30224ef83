"""The merge family: `merge_cases` returns case builders (data is made when a case runs) for
jmp.merge (int32 / float32 / int64 / float64, equal and 1% splits) and jmp.merge_by_key, against
jnp.sort(concatenate), a searchsorted + scatter merge and lax.sort(num_keys=1)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jax_mergepath as jmp
from perf.bench.case import Case
from perf.bench.data import dname, prng, sorted_keys, x64_ok
from perf.bench.timing import Variant


def searchsorted_merge(a: jax.Array, b: jax.Array) -> jax.Array:
    pos_a = jnp.arange(a.shape[0]) + jnp.searchsorted(b, a, side="left")
    pos_b = jnp.arange(b.shape[0]) + jnp.searchsorted(a, b, side="right")
    out = jnp.empty(a.shape[0] + b.shape[0], a.dtype)
    return out.at[pos_a].set(a, unique_indices=True).at[pos_b].set(b, unique_indices=True)


def concat_sort(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.sort(jnp.concatenate([a, b]))


def concat_sort_pairs(a, b, va, vb):
    return lax.sort((jnp.concatenate([a, b]), jnp.concatenate([va, vb])), num_keys=1)


def merge_case(dtype, total: int, frac_a: float, pairs: bool, cub_merge_n: int) -> Case:
    m = max(1, int(total * frac_a))
    n = total - m
    ka, kb = jax.random.split(prng(total, int(frac_a * 1000), np.dtype(dtype).num))
    a, b = sorted_keys(ka, m, dtype), sorted_keys(kb, n, dtype)
    itemsize = np.dtype(dtype).itemsize
    lg = total.bit_length() - 1
    if pairs:
        va = jax.random.randint(prng(total, 1), (m,), 0, 2**31 - 1, jnp.int32)
        vb = jax.random.randint(prng(total, 2), (n,), 0, 2**31 - 1, jnp.int32)
        args = (a, b, va, vb)
        return Case(
            "merge", f"merge kv {dname(dtype)} 2^{lg} a={frac_a:.0%}", total,
            2 * total * (itemsize + 4),
            [Variant("jmp.merge_by_key", jmp.merge_by_key, args)],
            [Variant("lax.sort(concat, num_keys=1)", concat_sort_pairs, args)],
        )
    args = (a, b)
    cub = []
    if frac_a == 0.5 and total == cub_merge_n and dname(dtype) in ("int32", "float32"):
        cub = [f"merge_keys_{dname(dtype)}"]
    return Case(
        "merge", f"merge {dname(dtype)} 2^{lg} a={frac_a:.0%}", total, 2 * total * itemsize,
        [Variant("jmp.merge", jmp.merge, args)],
        [Variant("jnp.sort(concat)", concat_sort, args),
         Variant("searchsorted+scatter", searchsorted_merge, args)],
        cub=cub,
    )


def merge_cases(sizes: list[int], quick: bool, cub_merge_n: int) -> list[Callable[[], Case]]:
    dtypes = [jnp.int32] if quick else [jnp.int32, jnp.float32, jnp.int64, jnp.float64]
    cases = []
    for log2 in sizes:
        for dtype in dtypes:
            if not x64_ok(dtype):
                continue
            for frac in (0.5, 0.01):
                cases.append(lambda d=dtype, t=1 << log2, f=frac: merge_case(
                    d, t, f, False, cub_merge_n))
        cases.append(lambda t=1 << log2: merge_case(jnp.int32, t, 0.5, True, cub_merge_n))
    return cases
