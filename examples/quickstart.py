"""jax_mergepath quickstart: merges inside jax.jit, a vmap over many small merges, a ragged
batch, values moved with their keys, and the sorts (argsort, sort_by_key with a pytree payload,
lax_sort on two keys, searchsorted). Every result is checked against numpy / jnp and the script
exits non-zero on a mismatch.

    python examples/quickstart.py [--seed N]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

import jax_mergepath as jmp


def reference_merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    both = np.concatenate([a, b], axis=-1)
    return np.take_along_axis(both, np.argsort(both, axis=-1, kind="stable"), axis=-1)


def check(name: str, got, want) -> None:
    ok = np.array_equal(np.asarray(got), np.asarray(want), equal_nan=True)
    print(f"  {'ok ' if ok else 'BAD'} {name}")
    if not ok:
        raise SystemExit(f"{name}: got {np.asarray(got)}, want {np.asarray(want)}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=" ".join((__doc__ or "").split("\n\n")[0].split()),  # the first paragraph
        epilog="Runs on the default JAX device; prints each step and 'all checks passed'.",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed of the data")
    args = parser.parse_args(argv)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; CUDA build: {jmp.HAS_CUDA}")
    rng = np.random.default_rng(args.seed)

    print("1. one merge inside jax.jit (NaN last, -0.0 == +0.0, ties: a before b)")
    a = jnp.array([-1.0, -0.0, 2.0, jnp.nan])
    b = jnp.array([0.0, 2.0, 3.0])
    merged, idx = jax.jit(lambda a, b: jmp.merge(a, b, return_indices=True))(a, b)
    print("   merged:", merged, " indices into concat([a, b]):", idx)
    check("merged values", merged, reference_merge(np.asarray(a), np.asarray(b)))
    check("indices", idx, [0, 1, 4, 2, 5, 6, 3])

    print("2. vmap over 10,000 small merges: ONE batched kernel call")
    a = np.sort(rng.integers(0, 100, (10_000, 16)), axis=-1).astype(np.int32)
    b = np.sort(rng.integers(0, 100, (10_000, 24)), axis=-1).astype(np.int32)
    batched = jax.jit(jax.vmap(jmp.merge))
    hlo = batched.lower(a, b).as_text()
    print(f"   custom calls in the lowered program: {hlo.count('custom_call')}, loops: "
          f"{hlo.count('stablehlo.while')}")
    check("vmap of merge", batched(a, b), reference_merge(a, b))

    print("3. ragged batch: row r merges a[r, :a_len[r]] with b[r, :b_len[r]]")
    a_len = rng.integers(0, 17, 10_000)
    b_len = rng.integers(0, 25, 10_000)
    ragged = jax.jit(jmp.merge)(a, b, a_length=a_len, b_length=b_len)
    r = 7
    valid = reference_merge(a[r, : a_len[r]], b[r, : b_len[r]])
    tails = np.concatenate([a[r, a_len[r]:], b[r, b_len[r]:]])
    print(f"   row {r}: a_len={a_len[r]}, b_len={b_len[r]} -> {np.asarray(ragged[r])}")
    check("ragged row (valid merge, then a's tail, then b's tail)", ragged[r],
          np.concatenate([valid, tails]))

    print("4. merge_by_key: particle ids and positions follow their keys")
    keys_a, keys_b = jnp.array([1, 4, 9]), jnp.array([2, 4, 7])
    pos_a = jnp.arange(9.0).reshape(3, 3)
    pos_b = -jnp.arange(9.0).reshape(3, 3)
    keys, values = jmp.merge_by_key(keys_a, keys_b, {"id": jnp.array([10, 40, 90]),
                                                     "pos": pos_a},
                                    {"id": jnp.array([20, 41, 70]), "pos": pos_b})
    print("   keys:", keys, " ids:", values["id"])
    check("ids", values["id"], [10, 20, 40, 41, 70, 90])
    check("positions", values["pos"][1], pos_b[0])

    print("5. gradients flow through the permutation")
    grad = jax.grad(lambda a, b: jnp.sum(jmp.merge(a, b) * jnp.arange(5.0)))(
        jnp.array([1.0, 3.0]), jnp.array([0.0, 2.0, 4.0]))
    print("   d/da:", grad)
    check("gradient", grad, [1.0, 3.0])
    print("6. sorts: stable argsort (NaN last), rows sorted in one call, particles by cell")
    x = jnp.array([3.0, jnp.nan, -0.0, 0.0, -2.0, 3.0])
    idx = jax.jit(jmp.argsort)(x)
    print("   argsort:", idx)
    check("argsort", idx, [4, 2, 3, 0, 5, 1])
    rows = rng.integers(0, 1000, (4096, 64)).astype(np.int32)
    check("4096 row sorts", jax.jit(jmp.sort)(rows), np.sort(rows, axis=-1))
    cell = rng.integers(0, 50, 1000).astype(np.int32)
    pos = rng.standard_normal((1000, 3)).astype(np.float32)
    sorted_cell, moved = jax.jit(jmp.sort_by_key)(cell, {"pos": pos, "id": np.arange(1000)})
    perm = np.argsort(cell, kind="stable")
    check("sort_by_key ids", moved["id"], perm)
    check("sort_by_key positions", moved["pos"], pos[perm])
    species = rng.integers(0, 3, 1000).astype(np.int8)
    energy = rng.standard_normal(1000).astype(np.float32)
    s, e = jmp.lax_sort((species, energy), num_keys=2)
    order = np.lexsort((energy, species))
    check("lax_sort on (species, energy)", e, energy[order])
    starts = jmp.searchsorted(sorted_cell, jnp.arange(50, dtype=jnp.int32), sorted_v=True)
    check("cell starts (searchsorted)", starts,
          np.searchsorted(np.sort(cell), np.arange(50)))
    print("all checks passed")


if __name__ == "__main__":
    main()
