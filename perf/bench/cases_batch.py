"""The batch family: `batch_cases` returns case builders for vmapped merges of many rows (one
batched kernel call) at a fixed total size, for row widths d (each side) from 8 to 65536, full
and ragged (random valid lengths a row), against vmap(jnp.sort(concatenate)), the only jnp way
to merge rows."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

import jax_mergepath as jmp
from perf.bench.case import Case
from perf.bench.data import prng, sorted_keys
from perf.bench.timing import Variant

BATCH_WIDTHS = (8, 16, 32, 128, 512, 1024, 4096, 65536)
RAGGED_WIDTH = 512


def concat_sort_rows(a: jax.Array, b: jax.Array) -> jax.Array:
    return jax.vmap(lambda x, y: jnp.sort(jnp.concatenate([x, y])))(a, b)


def ragged_reference(a, b, la, lb):
    """The ragged merge with jnp: valid parts sorted together, then a's tail, then b's tail."""
    d = a.shape[-1]
    pos = jnp.arange(d)

    def row(x, y, lx, ly):
        # Group 0: valid keys (sorted by key); 1: a's tail; 2: b's tail (kept in order).
        group = jnp.concatenate([jnp.where(pos < lx, 0, 1), jnp.where(pos < ly, 0, 2)])
        keys = jnp.concatenate([x, y])
        return jax.lax.sort((group, keys), num_keys=2)[1]

    return jax.vmap(row)(a, b, la, lb)


def batch_case(total_log2: int, d: int, ragged: bool) -> Case:
    rows = (1 << total_log2) // (2 * d)
    ka, kb, kl = jax.random.split(prng(total_log2, d, int(ragged)), 3)
    a, b = sorted_keys(ka, (rows, d), jnp.int32), sorted_keys(kb, (rows, d), jnp.int32)
    n = 2 * rows * d
    name = f"vmap merge int32 2^{total_log2} as {rows} x ({d}+{d})"
    if not ragged:
        return Case("batch", name, n, 2 * n * 4,
                    [Variant("jit(vmap(jmp.merge))", jax.vmap(jmp.merge), (a, b))],
                    [Variant("vmap(jnp.sort(concat))", concat_sort_rows, (a, b))])
    la = jax.random.randint(kl, (rows,), 0, d + 1, jnp.int32)
    lb = jax.random.randint(jax.random.fold_in(kl, 1), (rows,), 0, d + 1, jnp.int32)
    # The valid parts must be sorted and the tails anything: sorted rows qualify.
    args = (a, b, la, lb)

    def ours(a, b, la, lb):
        return jax.vmap(lambda x, y, p, q: jmp.merge(x, y, a_length=p, b_length=q))(a, b, la, lb)

    return Case("batch", f"ragged {name}", n, 2 * n * 4,
                [Variant("vmap(merge(a_length, b_length))", ours, args)],
                [Variant("vmap(lax.sort(group, key))", ragged_reference, args)])


def batch_cases(total_log2: int, quick: bool) -> list[Callable[[], Case]]:
    widths = (32, 512) if quick else BATCH_WIDTHS
    cases: list[Callable[[], Case]] = [
        lambda d=d: batch_case(total_log2, d, False)
        for d in widths if 2 * d <= (1 << total_log2)
    ]
    if 2 * RAGGED_WIDTH <= (1 << total_log2):
        cases.append(lambda: batch_case(total_log2, RAGGED_WIDTH, True))
    return cases

