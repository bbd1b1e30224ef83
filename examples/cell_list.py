"""Short-range forces with a cell list: particles sorted by cell every step.

Soft disks (diameter 1, harmonic repulsion) move in a periodic square box divided into cells of
side 1, the interaction range. Every step sorts the particles by cell id with
`jmp.sort_by_key`, moving positions, velocities and ids (a pytree payload) along;
`jmp.searchsorted` of the sorted cell ids 0..cells**2 finds every cell's range in one
merge-path pass; each particle then sums the forces of the particles in its 3 x 3 neighbouring
cells (at most --max-occupancy per cell, checked) and the state is advanced, all inside one
`lax.scan`. The state stays in the last step's order, so each sort starts from nearly sorted
keys (what an MD code does; the merge sort copies runs already in order).

The jnp-only version sorts with `jnp.argsort(stable=True)` and gathers the payload, and finds the
cell ranges with `jnp.searchsorted`. The script asserts that one step from the same state gives
identical sorted particles and cell ranges (exact), and that whole trajectories agree (to
float32 rounding, see `check`), then times both scans.

    python examples/cell_list.py                    # small: 2025 particles, seconds on a CPU
    python examples/cell_list.py --size gpu         # 2 million particles
    python examples/cell_list.py --cells 64 --density 0.6 --steps 50
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
    "small": {"cells": 64, "density": 0.5, "steps": 20, "max_occupancy": 6, "reps": 5},
    "gpu": {"cells": 2048, "density": 0.5, "steps": 20, "max_occupancy": 6, "reps": 10},
}
DT = 0.02  # time step
STIFFNESS = 20.0  # harmonic overlap energy: STIFFNESS / 2 * (1 - r)**2 for r < 1
TEMPERATURE = 1.0  # initial velocities ~ N(0, TEMPERATURE)

State = tuple[jax.Array, jax.Array, jax.Array]  # positions (n, 2), velocities (n, 2), ids (n,)
SortStage = Callable[[jax.Array, dict[str, jax.Array], int],
                     tuple[jax.Array, dict[str, jax.Array], jax.Array]]


def cell_of(pos: jax.Array, m: int) -> jax.Array:
    """Cell id (row-major, m x m cells of side 1) of each position in [0, m)."""
    c = jnp.floor(pos).astype(jnp.int32) % m  # % m: a position rounded up to m wraps to 0
    return c[:, 1] * m + c[:, 0]


def jmp_stage(cell: jax.Array, payload: dict[str, jax.Array],
              m: int) -> tuple[jax.Array, dict[str, jax.Array], jax.Array]:
    cell, payload = jmp.sort_by_key(cell, payload)
    starts = jmp.searchsorted(cell, jnp.arange(m * m + 1, dtype=jnp.int32), sorted_v=True)
    return cell, payload, starts


def jnp_stage(cell: jax.Array, payload: dict[str, jax.Array],
              m: int) -> tuple[jax.Array, dict[str, jax.Array], jax.Array]:
    order = jnp.argsort(cell, stable=True)
    cell, payload = cell[order], jax.tree.map(lambda x: x[order], payload)
    starts = jnp.searchsorted(cell, jnp.arange(m * m + 1, dtype=jnp.int32)).astype(jnp.int32)
    return cell, payload, starts


def forces(pos: jax.Array, cell: jax.Array, starts: jax.Array, m: int,
           k: int) -> tuple[jax.Array, jax.Array]:
    """Forces (n, 2) and potential energies (n,) of particles sorted by cell: for each of the
    3 x 3 cells around a particle's, the first k particles of that cell (padded, masked)."""
    n = pos.shape[0]
    i = jnp.arange(n, dtype=jnp.int32)
    cx, cy = cell % m, cell // m
    slots = jnp.arange(k, dtype=jnp.int32)
    x, y = pos[:, 0], pos[:, 1]  # (n,) columns: gathers of (n, k) scalars are cheaper
    fx, fy, energy = (jnp.zeros(n, pos.dtype) for _ in range(3))
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            other = ((cy + dy) % m) * m + (cx + dx) % m
            j = starts[other][:, None] + slots  # (n, k) candidate partners
            valid = (j < starts[other + 1][:, None]) & (j != i[:, None])
            j = jnp.minimum(j, n - 1)
            ddx, ddy = x[j] - x[:, None], y[j] - y[:, None]
            ddx, ddy = ddx - m * jnp.round(ddx / m), ddy - m * jnp.round(ddy / m)  # periodic
            r = jnp.sqrt(ddx * ddx + ddy * ddy)
            overlap = valid & (r < 1.0)
            push = jnp.where(overlap, STIFFNESS * (1.0 - r) / jnp.maximum(r, 1e-6), 0.0)
            fx, fy = fx - jnp.sum(push * ddx, axis=1), fy - jnp.sum(push * ddy, axis=1)
            # half of each pair's energy STIFFNESS / 2 * (1 - r)**2 goes to each particle
            energy = energy + jnp.sum(jnp.where(overlap, 0.25 * STIFFNESS * (1.0 - r) ** 2, 0.0),
                                      axis=1)
    return jnp.stack([fx, fy], axis=-1), energy


def step(state: State, _: Any, *, stage: SortStage, m: int,
         k: int) -> tuple[State, tuple[jax.Array, jax.Array]]:
    """Sort by cell, find the cells' ranges, sum the forces, move (symplectic Euler)."""
    pos, vel, ids = state
    cell, moved, starts = stage(cell_of(pos, m), {"pos": pos, "vel": vel, "id": ids}, m)
    force, energy = forces(moved["pos"], cell, starts, m, k)
    vel = moved["vel"] + DT * force
    pos = jnp.mod(moved["pos"] + DT * vel, jnp.float32(m))
    occupancy = jnp.max(jnp.diff(starts))
    return (pos, vel, moved["id"]), (jnp.sum(energy), occupancy)


def run(state: State, *, stage: SortStage, m: int, k: int,
        steps: int) -> tuple[State, tuple[jax.Array, jax.Array]]:
    """`steps` steps in one scan: the final state (last step's order) and per-step potential
    energy and largest cell occupancy."""
    return lax.scan(partial(step, stage=stage, m=m, k=k), state, None, length=steps)


def initial_state(rng: np.random.Generator, m: int, density: float) -> State:
    """Particles on a jittered square lattice of the given density (no cell starts crowded),
    in random order, with random velocities of zero total momentum."""
    q = max(1, int(round(m * np.sqrt(density))))  # q x q particles
    grid = np.stack(np.meshgrid(np.arange(q), np.arange(q)), axis=-1).reshape(-1, 2)
    pos = (grid + 0.5 + rng.uniform(-0.25, 0.25, grid.shape)) * (m / q)
    pos = rng.permutation(pos).astype(np.float32)
    vel = rng.normal(0.0, np.sqrt(TEMPERATURE), pos.shape).astype(np.float32)
    vel -= vel.mean(axis=0)
    return jnp.asarray(pos), jnp.asarray(vel), jnp.arange(len(pos), dtype=jnp.int32)


def by_id(state: State) -> tuple[np.ndarray, np.ndarray]:
    pos, vel, ids = (np.asarray(x) for x in state)
    order = np.argsort(ids)
    return pos[order], vel[order]


def check(checks: Checks, state: State, m: int, k: int, ends: tuple[Any, Any]) -> None:
    """One step's sort stage from the same state must agree exactly (stable sorts of the same
    keys: the same permutation; gathers copy bits). Trajectories run the same float32
    arithmetic in two differently fused programs (XLA may contract a*b+c into an FMA in one and
    not the other), and many-body dynamics amplify such last-bit differences step by step: so
    they are compared to a tolerance a few hundred times float32's resolution."""
    pos, vel, ids = state
    payload = {"pos": pos, "vel": vel, "id": ids}
    one = [jax.jit(partial(s, m=m))(cell_of(pos, m), payload) for s in (jmp_stage, jnp_stage)]
    checks.equal("one step's sort by cell and cell ranges equal jnp's", one[0], one[1])
    (end_fast, (e_fast, occ_fast)), (end_base, (e_base, occ_base)) = ends
    (p_fast, v_fast), (p_base, v_base) = by_id(end_fast), by_id(end_base)
    wrapped = p_fast - p_base
    wrapped -= m * np.round(wrapped / m)  # the same point may sit at 0 and at m
    checks.close("final positions (by id) match jnp's", wrapped, np.zeros_like(wrapped),
                 rtol=0.0, atol=1e-4)
    checks.close("final velocities (by id) match jnp's", v_fast, v_base, rtol=1e-4, atol=1e-4)
    checks.close("potential energy per step matches jnp's", e_fast, e_base, rtol=1e-4,
                 atol=1e-3)
    worst = int(max(np.max(occ_fast), np.max(occ_base)))
    checks.true(f"no cell held more than --max-occupancy={k} particles (most: {worst})",
                worst <= k, "forces missed neighbours: raise --max-occupancy")
    checks.true("ids are a permutation", np.array_equal(np.sort(np.asarray(end_fast[2])),
                                                        np.arange(len(ids))))


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__, SIZES)
    parser.add_argument("--cells", type=int, help="cells per side of the box (box side)")
    parser.add_argument("--density", type=float, help="particles per unit area (per cell)")
    parser.add_argument("--steps", type=int, help="time steps per scan")
    parser.add_argument("--max-occupancy", type=int,
                        help="particles of a neighbouring cell looked at (checked to suffice)")
    args = resolve(parser.parse_args(argv), SIZES)
    if args.cells < 3 or args.steps < 1 or args.max_occupancy < 1 or args.density <= 0:
        parser.error("need --cells >= 3, --steps >= 1, --max-occupancy >= 1, --density > 0")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    m, k = args.cells, args.max_occupancy
    state = initial_state(np.random.default_rng(args.seed), m, args.density)
    header("cell_list", args, particles=len(state[2]), cells=f"{m}x{m}", steps=args.steps,
           max_occupancy=k)
    fast, base = (jax.jit(partial(run, stage=s, m=m, k=k, steps=args.steps))
                  for s in (jmp_stage, jnp_stage))
    checks = Checks()
    ends = (fast(state), base(state))
    check(checks, state, m, k, ends)
    timings = compare_timings(fast, base, (state,), reps=args.reps, steps=args.steps)
    # The stage on the last step's state: nearly sorted keys, as in the scan.
    pos, vel, ids = ends[0][0]
    stage_args = (cell_of(pos, m), {"pos": pos, "vel": vel, "id": ids})
    timings |= compare_stage(*(jax.jit(partial(s, m=m)) for s in (jmp_stage, jnp_stage)),
                             stage_args, reps=args.reps,
                             what="sort by cell with the payload + cell ranges")
    return result(checks, timings, particles=len(state[2]))


if __name__ == "__main__":
    main()
