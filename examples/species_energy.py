"""Which species fares best? Energy distributions of many cell populations at once.

Each simulation is a population of cells of several species. At every step the cells collide in
random pairs and split their pooled energy: the split favours the species with more "grip" and
is blurred by noise (grips and noise amplitude are the simulation's parameters). Energy is kept
in integer quanta, so it is conserved exactly. Every few steps the per-species energy
distribution is measured by sorting the cells on (species, energy) with
`jmp.lax_sort(..., num_keys=2)`; one `jmp.searchsorted` of sorted queries then finds every
species' range and every energy bin's edges at once, giving counts per bin, quantiles and each
species' total. `jax.vmap` runs many simulations with different parameters in one program, so
each measurement sorts all populations in one batched kernel call.

The same program with `jax.lax.sort(..., num_keys=2)` and `jnp.searchsorted` is the jnp-only
version; the script asserts that both give identical histories (all integers: exact), then times
both.

    python examples/species_energy.py                 # small: seconds on a CPU
    python examples/species_energy.py --size gpu      # 4096 simulations of 1024 cells
    python examples/species_energy.py --sims 64 --steps 200 --show 12
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _common import Checks, compare_stage, compare_timings, header, make_parser, resolve, result
from jax import lax

import jax_mergepath as jmp

SIZES = {
    "small": {"sims": 32, "cells": 512, "species": 4, "steps": 32, "every": 2, "reps": 5},
    "gpu": {"sims": 4096, "cells": 1024, "species": 8, "steps": 64, "every": 2, "reps": 10},
}
MEAN_ENERGY = 48  # quanta per cell; cells * MEAN_ENERGY < 2**16 keeps every energy in a uint16
EDGES = np.array([0, 12, 24, 48, 72, 96, 144, 192], np.int32)  # lower edges of the energy bins
QUANTILES = np.array([10, 50, 90], np.int32)  # percent

Sort = Callable[[jax.Array, jax.Array], tuple[jax.Array, jax.Array]]
Search = Callable[[jax.Array, jax.Array], jax.Array]


def jmp_sort(species: jax.Array, energy: jax.Array) -> tuple[jax.Array, jax.Array]:
    # uint8 species and uint16 energies pack into one 24-bit key: one stable sort pass.
    return jmp.lax_sort((species, energy), num_keys=2)  # type: ignore[return-value]


def jnp_sort(species: jax.Array, energy: jax.Array) -> tuple[jax.Array, jax.Array]:
    return lax.sort((species, energy), num_keys=2, is_stable=True)  # type: ignore[return-value]


def jmp_search(a: jax.Array, v: jax.Array) -> jax.Array:
    return jmp.searchsorted(a, v, sorted_v=True)  # sorted queries: one merge-path pass


def jnp_search(a: jax.Array, v: jax.Array) -> jax.Array:
    return jnp.searchsorted(a, v).astype(jnp.int32)


def collide(energy: jax.Array, species: jax.Array, bias: jax.Array, amp: jax.Array,
            key: jax.Array) -> jax.Array:
    """One step: cell i meets cell i ^ mask (a random pairing, cells a power of two), the pair
    pools its energy and the lower cell gets share/256 of it; integer arithmetic only."""
    n = energy.shape[0]
    k_pair, k_noise = jax.random.split(key)
    i = jnp.arange(n, dtype=jnp.int32)
    partner = i ^ jax.random.randint(k_pair, (), 1, n, dtype=jnp.int32)
    lo, hi = jnp.minimum(i, partner), jnp.maximum(i, partner)
    noise = (jax.random.bits(k_noise, (n,), jnp.uint32) >> 24).astype(jnp.int32) - 128
    e = energy.astype(jnp.int32)
    pooled = e + e[partner]
    share = 128 + bias[species[lo], species[hi]] + ((noise[lo] * amp) >> 7)
    lo_gets = (pooled * jnp.clip(share, 0, 256)) >> 8
    return jnp.where(i == lo, lo_gets, pooled - lo_gets).astype(energy.dtype)


def measure(species: jax.Array, energy: jax.Array, n_species: int, sort: Sort,
            search: Search) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Per species: cells per energy bin (S, bins), energy quantiles (S, q; -1 for a species
    without cells) and total energy (S,), from one sort and one search."""
    s, e = sort(species, energy)
    # (species, energy) as one int32 (energies < 2**16): the same order, so sorted queries
    # (s, edge) find every species' start and every bin edge in one search.
    key = (s.astype(jnp.int32) << 16) | e.astype(jnp.int32)
    ids = jnp.arange(n_species, dtype=jnp.int32)
    queries = ((ids[:, None] << 16) | jnp.asarray(EDGES)[None, :]).ravel()
    queries = jnp.append(queries, jnp.int32(n_species << 16))
    bounds = search(key, queries)
    counts = jnp.diff(bounds).reshape(n_species, len(EDGES))
    starts = bounds[:: len(EDGES)]  # (S + 1,): species s holds sorted cells starts[s]:starts[s+1]
    size = jnp.diff(starts)
    cum = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(e, dtype=jnp.int32)])
    total = cum[starts[1:]] - cum[starts[:-1]]
    at = starts[:-1, None] + (jnp.asarray(QUANTILES) * jnp.maximum(size - 1, 0)[:, None]) // 100
    quantiles = jnp.where(size[:, None] > 0, e[jnp.clip(at, 0, e.shape[0] - 1)], -1)
    return counts, quantiles.astype(jnp.int32), total


def simulate(species: jax.Array, bias: jax.Array, amp: jax.Array, key: jax.Array, *,
             steps: int, every: int, sort: Sort,
             search: Search) -> tuple[jax.Array, tuple[jax.Array, jax.Array, jax.Array]]:
    """One population: `steps` collision steps, measured every `every` steps (a scan of scans).
    Returns the final energies and the history of measurements."""
    n_species = bias.shape[0]

    def block(carry, _):
        def step(carry, _):
            energy, key = carry
            key, sub = jax.random.split(key)
            return (collide(energy, species, bias, amp, sub), key), None

        carry, _ = lax.scan(step, carry, None, length=every)
        return carry, measure(species, carry[0], n_species, sort, search)

    energy0 = jnp.full(species.shape, MEAN_ENERGY, jnp.uint16)
    (energy, _), history = lax.scan(block, (energy0, key), None, length=steps // every)
    return energy, history


def make_params(rng: np.random.Generator, sims: int, n_species: int,
                cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per simulation: species of each cell (uint8), noise amplitude (0..128), grips, and the
    (S, S) integer bias of a split between species a (lower cell) and b."""
    species = rng.integers(0, n_species, (sims, cells)).astype(np.uint8)
    amp = rng.integers(0, 129, sims).astype(np.int32)
    grips = rng.normal(0.0, 0.5, (sims, n_species))
    bias = np.rint(96 * np.tanh(grips[:, :, None] - grips[:, None, :])).astype(np.int32)
    return species, amp, grips, bias


def print_table(grips: np.ndarray, amp: np.ndarray, counts: np.ndarray, total: np.ndarray,
                quantiles: np.ndarray, show: int) -> np.ndarray:
    """Which species fares best (highest mean energy at the last measurement) per parameter
    set; returns the best species of every simulation."""
    size = counts.sum(axis=-1)
    mean = np.where(size > 0, total / np.maximum(size, 1), -np.inf)
    best = np.argmax(mean, axis=-1)
    rows = min(show, len(best))
    if rows > 0:
        print(f"  mean energy per species at the end (of {MEAN_ENERGY} at the start), "
              f"first {rows} parameter sets:")
        print("   sim  noise  best  grip of best  median of best  "
              + " ".join(f"{'s' + str(s):>6s}" for s in range(grips.shape[1])))
    for r in range(rows):
        b = best[r]
        print(f"  {r:4d}  {amp[r] / 128:5.2f}  {b:4d}  {grips[r, b]:+12.2f}  "
              f"{quantiles[r, b, 1]:14d}  " + " ".join(f"{m:6.1f}" for m in mean[r]))
    top = np.mean(best == np.argmax(grips, axis=-1))
    print(f"  the species with the most grip fared best in {top:.0%} of {len(best)} simulations")
    return best


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__, SIZES)
    parser.add_argument("--sims", type=int, help="simulations run at once (vmap)")
    parser.add_argument("--cells", type=int, help="cells per simulation, a power of two")
    parser.add_argument("--species", type=int, help="species per simulation (at most 256)")
    parser.add_argument("--steps", type=int, help="collision steps per simulation")
    parser.add_argument("--every", type=int, help="steps between two measurements")
    parser.add_argument("--show", type=int, default=8, help="parameter sets shown in the table")
    args = resolve(parser.parse_args(argv), SIZES)
    if args.cells < 2 or args.cells & (args.cells - 1):
        parser.error("--cells must be a power of two >= 2 (cells pair up as i and i ^ mask)")
    if args.every < 1 or args.steps % args.every:
        parser.error("--steps must be a multiple of --every (>= 1): a measurement ends each block")
    if args.cells * MEAN_ENERGY >= 2**16:
        parser.error(f"--cells * {MEAN_ENERGY} must stay below 2**16 (uint16 energies)")
    if not 1 <= args.species <= 256 or args.every < 1 or args.steps < args.every:
        parser.error("need 1 <= --species <= 256 and 1 <= --every <= --steps")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    header("species_energy", args, sims=args.sims, cells=args.cells, species=args.species,
           steps=args.steps, every=args.every)
    rng = np.random.default_rng(args.seed)
    species, amp, grips, bias = make_params(rng, args.sims, args.species, args.cells)
    keys = jax.random.split(jax.random.key(args.seed), args.sims)
    inputs = (jnp.asarray(species), jnp.asarray(bias), jnp.asarray(amp), keys)

    def program(sort: Sort, search: Search) -> Callable[..., Any]:
        sim = partial(simulate, steps=args.steps, every=args.every, sort=sort, search=search)
        return jax.jit(jax.vmap(sim))

    fast, base = program(jmp_sort, jmp_search), program(jnp_sort, jnp_search)
    energy, (counts, quantiles, total) = jax.device_get(fast(*inputs))
    want = jax.device_get(base(*inputs))

    checks = Checks()
    checks.equal("histories (bin counts, quantiles, totals) equal jnp's", (counts, quantiles,
                                                                          total), want[1])
    checks.equal("final energies equal jnp's (the simulation itself; no sort feeds back)",
                 energy, want[0])
    checks.true("energy conserved in every simulation",
                np.all(energy.astype(np.int64).sum(-1) == args.cells * MEAN_ENERGY))
    checks.true("every measurement counts every cell once",
                np.all(counts.sum(axis=(-1, -2)) == args.cells)
                and np.all(total.sum(-1) == args.cells * MEAN_ENERGY))

    best = print_table(grips, np.asarray(amp), counts[:, -1], total[:, -1], quantiles[:, -1],
                       args.show)
    timings = compare_timings(fast, base, inputs, reps=args.reps, steps=args.steps)
    stages = (jax.jit(jax.vmap(partial(measure, n_species=args.species, sort=sort,
                                       search=search)))
              for sort, search in ((jmp_sort, jmp_search), (jnp_sort, jnp_search)))
    timings |= compare_stage(*stages, (inputs[0], jnp.asarray(energy)), reps=args.reps,
                             what="one measurement of every population: sort + search")
    return result(checks, timings, best_species=best.tolist())


if __name__ == "__main__":
    main()
