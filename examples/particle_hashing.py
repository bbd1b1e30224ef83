"""Particles re-sorted by a Morton (Z-order) hash every step, every field moved with them.

Point particles fly through a periodic 3-D box and collide by stochastic rotation dynamics
(SRD): the box is divided into cells, and every step each particle's velocity relative to its
cell's mass-weighted mean velocity is turned by 90 degrees about an axis drawn for that cell.
The particles are kept sorted by a spatial hash, the Morton code of their positions (the top 10
bits of each coordinate interleaved: 30 bits). A collision cell is a prefix of the code, so each
cell's particles are one run of the sorted order, and the sums per cell (a scatter-add into a
dense array of cells) and their gather back read and write memory in order, as GPU particle
codes sort for. Every step moves the particles a little and re-sorts them by their new hash,
moving every field with them (x, y, z, vx, vy, vz, mass, id: eight arrays); the keys arrive
nearly sorted, since the state is kept in the last step's order.

Everything is integer: positions are 32-bit fixed point (the box is 2**32 units a side, so the
periodic wrap is the integer overflow), velocities int32 in units of 2**VELOCITY_SHIFT position
units, masses small integers, cell sums int32. Integer arithmetic does not depend on the order
of a sum, so both versions' trajectories are compared bit for bit.

The stage compared is the sort by hash with every field moved. jax_mergepath (`--jmp-sort`):
`jmp.sort_by_key(hash, fields)` with the pytree of fields, or `jmp.argsort` plus a gather a
field. jnp only (`--jnp-sort`): `jnp.argsort(stable=True)` plus a gather a field, or one
`lax.sort` with the fields as operands. `--sweep` times the stage with all four. On an NVIDIA
H100 (jax 0.11.2, 2**24 particles, stage alone): jnp argsort + gathers 1.20 ms (XLA sends the
uint32 keys with int32 positions to CUB's radix sort), lax.sort 29.4 ms (nine operands: XLA's
comparison sort); jax_mergepath sort_by_key 1.57 ms, argsort + gathers 1.63 ms. On a 2-core
CPU (jax 0.10.2, 2**15 particles; a loaded machine, noisy) lax.sort took 2.5-4x argsort +
gathers, and jax_mergepath's two spellings 1.5-2.7x less than jnp's argsort. So the defaults are
sort_by_key and argsort; re-check them with `--size gpu --sweep`.

The script asserts that one step's sort from the same state gives identical particles, that
both scans give identical trajectories, that momentum and energy are kept (up to the rounding
of the cell means) and that no cell sum can overflow, then times both scans and the stage alone.

    python examples/particle_hashing.py                    # small: 2**15 particles on a CPU
    python examples/particle_hashing.py --size gpu         # 2**24 particles, 2**21 cells
    python examples/particle_hashing.py --sweep            # all four sort spellings' times
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    Checks,
    compare_stage,
    compare_timings,
    header,
    make_parser,
    resolve,
    result,
    time_per_call,
)
from jax import lax

import jax_mergepath as jmp

SIZES = {
    "small": {"particles": 2**15, "cell_bits": 4, "steps": 16, "speed": 0.05, "reps": 5},
    "gpu": {"particles": 2**24, "cell_bits": 7, "steps": 16, "speed": 0.05, "reps": 10},
}
HASH_BITS = 10  # Morton code of the top 10 bits of x, y and z: 30 bits
VELOCITY_SHIFT = 8  # a velocity unit is 2**8 position units
MAX_MASS = 4  # masses are 1 .. MAX_MASS
MAX_CELL_BITS = 8  # the per-cell sums are a dense (8**cell_bits, 4) int32 array
JMP_SORTS = ("sort_by_key", "argsort")
JNP_SORTS = ("argsort", "lax_sort")

Fields = dict[str, jax.Array]  # x, y, z (uint32), vx, vy, vz, mass, id (int32); all (n,)
SortStage = Callable[[jax.Array, Fields], tuple[jax.Array, Fields]]
AXES = ("x", "y", "z")


def spread(c: jax.Array) -> jax.Array:
    """The 10 low bits of c moved to every third bit (bit k to bit 3k)."""
    c = c & 0x3FF
    c = (c | (c << 16)) & 0x030000FF
    c = (c | (c << 8)) & 0x0300F00F
    c = (c | (c << 4)) & 0x030C30C3
    return (c | (c << 2)) & 0x09249249


def morton(fields: Fields) -> jax.Array:
    """30-bit Z-order hash (uint32) of the top HASH_BITS bits of each coordinate."""
    top = [fields[a] >> (32 - HASH_BITS) for a in AXES]
    return spread(top[0]) | (spread(top[1]) << 1) | (spread(top[2]) << 2)


def jmp_stage(keys: jax.Array, fields: Fields, *, how: str) -> tuple[jax.Array, Fields]:
    if how == "sort_by_key":
        return jmp.sort_by_key(keys, fields)
    order = jmp.argsort(keys)
    return keys[order], jax.tree.map(lambda f: f[order], fields)


def jnp_stage(keys: jax.Array, fields: Fields, *, how: str) -> tuple[jax.Array, Fields]:
    if how == "argsort":
        order = jnp.argsort(keys, stable=True)
        return keys[order], jax.tree.map(lambda f: f[order], fields)
    leaves, tree = jax.tree.flatten(fields)
    out = lax.sort((keys, *leaves), num_keys=1, is_stable=True)
    return out[0], jax.tree.unflatten(tree, out[1:])


def drift(fields: Fields) -> Fields:
    """Every particle moves by its velocity (uint32 arithmetic wraps: the periodic box)."""
    moved = dict(fields)
    for a in AXES:
        shift = lax.bitcast_convert_type(fields["v" + a] << VELOCITY_SHIFT, jnp.uint32)
        moved[a] = fields[a] + shift
    return moved


def collide(keys: jax.Array, f: Fields, salt: jax.Array,
            cell_bits: int) -> tuple[Fields, dict[str, jax.Array]]:
    """SRD collisions of particles sorted by hash: in each cell (the hash's top 3 * cell_bits
    bits: a Morton cell id) every velocity relative to the cell's mass-weighted mean (rounded
    to nearest) turns by 90 degrees about +-x, +-y or +-z, drawn from the cell and the step's
    salt. Also returns the step's diagnostics."""
    cell = keys >> (3 * (HASH_BITS - cell_bits))
    # Per cell: mass and momentum, summed into a dense array of every cell. The particles are
    # sorted by cell, so the scatter and the gather back touch memory in order.
    carried = jnp.stack([f["mass"]] + [f["mass"] * f["v" + a] for a in AXES], axis=1)
    sums = jnp.zeros((1 << 3 * cell_bits, 4), jnp.int32).at[cell].add(carried)
    mine = sums[cell]  # (n, 4): the particle's cell's mass and momentum
    mass = mine[:, 0]  # >= the particle's own mass >= 1
    # the mean rounded to nearest: the remainders left (|r| <= M / 2) have no sign bias
    mean = {a: (mine[:, k + 1] + mass // 2) // mass for k, a in enumerate(AXES)}
    rel = {a: f["v" + a] - mean[a] for a in AXES}
    # A multiplicative hash of the cell picks the axis (its top bits) and the sense.
    h = (cell ^ salt) * jnp.uint32(0x9E3779B1)
    axis, sense = ((h >> 16) * 3) >> 16, jnp.where((h >> 15) & 1 == 1, 1, -1)
    turned = dict(rel)
    for k in range(3):  # about axis k: (p, q) -> (-sense q, sense p), (k, p, q) cyclic
        p, q = AXES[(k + 1) % 3], AXES[(k + 2) % 3]
        on = axis == k
        turned[p] = jnp.where(on, -sense * rel[q], turned[p])
        turned[q] = jnp.where(on, sense * rel[p], turned[q])
    out = dict(f)
    for a in AXES:
        out["v" + a] = mean[a] + turned[a]
    stats = {
        "momentum": jnp.stack([jnp.sum(out["mass"] * out["v" + a]) for a in AXES]),
        "energy": sum(jnp.sum(out["mass"] * jnp.square(out["v" + a].astype(jnp.float32)))
                      for a in AXES) / 2,
        "cells": jnp.sum(sums[:, 0] > 0, dtype=jnp.int32),
        "max_cell_mass": jnp.max(sums[:, 0]),
        "max_speed": jnp.max(jnp.stack([jnp.maximum(jnp.max(out["v" + a]), -jnp.min(out["v" + a]))
                                        for a in AXES])),
    }
    return out, stats


def step(fields: Fields, salt: jax.Array, *, stage: SortStage,
         cell_bits: int) -> tuple[Fields, dict[str, jax.Array]]:
    """Move, hash, re-sort every field by hash, collide."""
    fields = drift(fields)
    keys, fields = stage(morton(fields), fields)
    return collide(keys, fields, salt, cell_bits)


def run(fields: Fields, salts: jax.Array, *, stage: SortStage,
        cell_bits: int) -> tuple[Fields, dict[str, jax.Array]]:
    """One step a salt, in one scan: the final fields and every step's diagnostics."""
    return lax.scan(partial(step, stage=stage, cell_bits=cell_bits), fields, salts)


def initial_fields(rng: np.random.Generator, n: int, speed_units: float) -> Fields:
    """Uniform positions, Maxwellian velocities of zero total momentum (nearly), masses 1 ..
    MAX_MASS, sorted by hash once (the simulation keeps them nearly sorted)."""
    f = {a: rng.integers(0, 2**32, n, dtype=np.uint32) for a in AXES}
    mass = rng.integers(1, MAX_MASS + 1, n).astype(np.int32)
    for a in AXES:
        v = rng.normal(0.0, speed_units / np.sqrt(mass))  # equal energy per degree of freedom
        f["v" + a] = np.rint(v - np.sum(mass * v) / np.sum(mass)).astype(np.int32)
    f["mass"], f["id"] = mass, np.arange(n, dtype=np.int32)
    order = np.argsort(np.asarray(morton({a: jnp.asarray(f[a]) for a in AXES})), kind="stable")
    return {k: jnp.asarray(v[order]) for k, v in f.items()}


def check(checks: Checks, one: tuple[Any, Any], ends: tuple[Any, Any], fields: Fields) -> None:
    """Exact agreement of one stage and of whole trajectories; then the physics."""
    checks.equal("one step's sort by hash with every field equals jnp's", one[0], one[1])
    checks.true("the sorted hashes are sorted", bool(jmp.is_sorted(one[0][0])))
    (end_fast, stats_fast), (end_base, stats_base) = ends
    checks.equal("final particles (every field) equal jnp's", end_fast, end_base)
    ints = ("momentum", "cells", "max_cell_mass", "max_speed")
    checks.equal("every step's momentum, occupied cells, largest cell equal jnp's",
                 {k: stats_fast[k] for k in ints}, {k: stats_base[k] for k in ints})
    checks.close("every step's kinetic energy matches jnp's", stats_fast["energy"],
                 stats_base["energy"], rtol=1e-6, atol=0.0)
    checks.true("ids are a permutation", np.array_equal(np.sort(np.asarray(end_fast["id"])),
                                                        np.arange(len(end_fast["id"]))))
    total_mass = int(np.sum(np.asarray(fields["mass"], np.int64)))
    start = np.array([np.sum(np.asarray(fields["mass"], np.int64)
                             * np.asarray(fields["v" + a], np.int64)) for a in AXES])
    momentum = np.concatenate([start[None], np.asarray(stats_fast["momentum"], np.int64)])
    # Per cell, rounding the mean down leaves a remainder of less than the cell's mass per
    # component, which the turn moves to another component: at most 2 * total mass a step.
    drift_ = int(np.max(np.abs(np.diff(momentum, axis=0))))
    checks.true(f"momentum kept up to the mean's rounding (largest change a step {drift_}, "
                f"bound {2 * total_mass})", drift_ <= 2 * total_mass)
    energy = np.asarray(stats_fast["energy"], np.float64)
    change = float(np.max(np.abs(energy / energy[0] - 1)))
    checks.true(f"kinetic energy kept to 1e-3 (largest relative change {change:.1e})",
                change <= 1e-3)
    worst = int(np.max(np.asarray(stats_fast["max_cell_mass"], np.int64)
                       * np.asarray(stats_fast["max_speed"], np.int64)))
    checks.true(f"no cell momentum near int32 overflow (largest bound {worst:.2e})",
                worst < 2**30, "lower --speed or raise --cell-bits")
    cells = np.asarray(stats_fast["cells"])
    print(f"  occupied cells per step: {cells.min()} .. {cells.max()}; heaviest cell "
          f"{int(np.max(stats_fast['max_cell_mass']))} mass units")


def sweep(stage_args: tuple[Any, ...], reps: int) -> dict[str, float]:
    """The sort-and-gather stage alone with each of the four spellings."""
    spellings = {f"jax_mergepath {h}": partial(jmp_stage, how=h) for h in JMP_SORTS}
    spellings |= {f"jnp {h}": partial(jnp_stage, how=h) for h in JNP_SORTS}
    times = {}
    for name, stage in spellings.items():
        times[name] = time_per_call(jax.jit(stage), stage_args, reps)
        print(f"  sweep: sort-and-gather stage with {name:26s} {times[name] * 1e3:9.3f} ms")
    return times


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__, SIZES)
    parser.add_argument("--particles", type=int, help="particles")
    parser.add_argument("--cell-bits", type=int,
                        help=f"collision cells per side: 2**cell_bits (1 .. {MAX_CELL_BITS})")
    parser.add_argument("--steps", type=int, help="steps per scan")
    parser.add_argument("--speed", type=float,
                        help="thermal speed, in collision cells a step (how far keys move)")
    parser.add_argument("--jmp-sort", choices=JMP_SORTS, default="sort_by_key",
                        help="jax_mergepath's spelling of the stage")
    parser.add_argument("--jnp-sort", choices=JNP_SORTS, default="argsort",
                        help="the jnp-only spelling (default: the fastest measured on a CPU)")
    parser.add_argument("--sweep", action="store_true",
                        help="also time the stage with all four spellings")
    args = resolve(parser.parse_args(argv), SIZES)
    if args.particles < 2 or args.steps < 1 or not 1 <= args.cell_bits <= MAX_CELL_BITS:
        parser.error(f"need --particles >= 2, --steps >= 1, 1 <= --cell-bits <= {MAX_CELL_BITS}")
    if not 0 < args.speed <= 1:
        parser.error("need 0 < --speed <= 1 (cells a step)")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    n = args.particles
    speed_units = args.speed * 2.0 ** (32 - args.cell_bits - VELOCITY_SHIFT)
    header("particle_hashing", args, particles=n, cells=f"{2**args.cell_bits}^3",
           steps=args.steps, speed=args.speed, jmp_sort=args.jmp_sort, jnp_sort=args.jnp_sort)
    rng = np.random.default_rng(args.seed)
    fields = initial_fields(rng, n, speed_units)
    salts = jnp.asarray(rng.integers(0, 2**32, args.steps, dtype=np.uint32))
    fast_stage = partial(jmp_stage, how=args.jmp_sort)
    base_stage = partial(jnp_stage, how=args.jnp_sort)
    fast, base = (jax.jit(partial(run, stage=s, cell_bits=args.cell_bits))
                  for s in (fast_stage, base_stage))
    ends = (fast(fields, salts), base(fields, salts))
    # The stage's inputs: the final state moved once more, as a step does (nearly sorted keys).
    moved = jax.jit(drift)(ends[0][0])
    stage_args = (jax.jit(morton)(moved), moved)
    fast_stage, base_stage = jax.jit(fast_stage), jax.jit(base_stage)
    one = (fast_stage(*stage_args), base_stage(*stage_args))

    checks = Checks()
    check(checks, one, ends, fields)
    unsorted = float(np.mean(np.diff(np.asarray(stage_args[0]).astype(np.int64)) < 0))
    print(f"  keys out of order before a sort: {unsorted:.1%} of adjacent pairs")
    timings = compare_timings(fast, base, (fields, salts), reps=args.reps, steps=args.steps,
                              fast_name=f"jmp {args.jmp_sort}",
                              base_name=f"jnp {args.jnp_sort}")
    timings |= compare_stage(fast_stage, base_stage, stage_args, reps=args.reps,
                             what="sort by hash, 8 fields moved")
    extra = {"particles": n, "jmp_sort": args.jmp_sort, "jnp_sort": args.jnp_sort,
             "unsorted_pairs": unsorted}
    if args.sweep:
        extra["sweep_s"] = sweep(stage_args, args.reps)
    return result(checks, timings, **extra)


if __name__ == "__main__":
    main()
