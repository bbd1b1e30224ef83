"""A particle filter's resampling: cumulative weights, sorted uniforms searched, particles gathered.

A bootstrap particle filter (sequential Monte Carlo) tracks a 1-D linear-Gaussian state,
x_t = PHI x_{t-1} + SIGMA eta_t observed as y_t = x_t + TAU eps_t, so the Kalman filter gives
the exact answer to check it against. Every step propagates each particle, weights it by the
observation, normalises the weights, takes their cumulative sum and resamples systematically:
the sorted uniforms (i + u) / N, one u a step, are searched in the cumulative weights, and every
particle field (a pytree: state, previous state, the sum of the states along the particle's
ancestry, the id of its ancestor at time 0) is gathered from the chosen ancestors. The search is
`jmp.searchsorted(..., sorted_v=True)`: the queries are sorted, so it is one merge-path pass over
the weights and the queries, where `jnp.searchsorted` searches each query on its own.

The comparison is rearranged so that the queries are exact: query i (the integer i, exact in
float32 up to 2**24 particles) is compared with N * cdf / cdf[-1] - u, and takes the first
particle whose value is >= i (`side="left"`, as blackjax's systematic resampling). The
jnp-only version (`--jnp-search`) is the fastest jnp spelling of that search measured:
`jnp.searchsorted` with `method` "scan", "scan_unrolled", "sort" or "compare_all" (quadratic
memory: small sizes only), or from each particle's count of queries, floor(value) + 1 less its
predecessor's: "counts" (a scatter-add of ones at floor(value) + 1, then a cumulative sum) or
"repeat" (`jnp.repeat(..., total_repeat_length=N)` of the counts). `--sweep` times the
resampling stage with every one of them. On an NVIDIA H100 (jax 0.11.2, 2**24 particles, stage
alone): counts 0.84 ms, repeat 1.32 ms, sort 3.73 ms, scan_unrolled 3.98 ms, scan 5.98 ms;
jax_mergepath 0.69 ms. On a 2-core CPU (jax 0.10.2, 2**14 particles) counts, repeat and scan
were within noise of each other (1.1-1.7 ms), sort and scan_unrolled 15-28 ms, compare_all 3 s.
So "counts" is the default.

What else the stage holds, the same in both versions (H100, 2**24): the cumulative sum 0.15
ms, the running max that makes it sorted 0.13 ms (XLA's cumsum can step back by an ulp where
its blocks meet), the gather of 4 fields 0.25 ms; the search is 0.20 ms with jax_mergepath.

The script asserts that both versions pick identical ancestors at every step (the final
particles, whose ancestry ids and path sums record every choice, and every step's count of
distinct ancestors and log-likelihood are compared exactly) and that the filter's
log-likelihood and filtered means match the Kalman filter's within Monte Carlo error, then
times both scans and the resampling stage alone (cumulative sum, search, gather).

    python examples/smc_resampling.py                      # small: 2**14 particles on a CPU
    python examples/smc_resampling.py --size gpu           # 2**24 particles
    python examples/smc_resampling.py --sweep              # every jnp spelling's stage time
    python examples/smc_resampling.py --jnp-search scan    # another jnp-only baseline
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
    "small": {"particles": 2**14, "steps": 32, "reps": 5},
    "gpu": {"particles": 2**24, "steps": 16, "reps": 10},
}
PHI, SIGMA, TAU = 0.9, 0.5, 0.3  # state persistence, state noise, observation noise
MAX_PARTICLES = 2**24  # the queries 0 .. N - 1 are exact float32 integers
JNP_SEARCHES = ("counts", "repeat", "scan", "scan_unrolled", "sort", "compare_all")
COMPARE_ALL_MAX = 2**14  # compare_all builds an N x N comparison

Particles = dict[str, jax.Array]  # every field (N,): x, x_prev, path_sum (float32), origin (int32)
Search = Callable[[jax.Array], jax.Array]  # scaled cdf (N,) -> ancestors (N,) int32


def jmp_search(scaled: jax.Array) -> jax.Array:
    """Ancestor of query i: the first j with scaled[j] >= i; sorted queries, one merge path."""
    n = scaled.shape[0]
    queries = jnp.arange(n, dtype=scaled.dtype)
    return jnp.minimum(jmp.searchsorted(scaled, queries, sorted_v=True), n - 1)


def jnp_search(scaled: jax.Array, *, method: str) -> jax.Array:
    """The same ancestors with jax.numpy alone: jnp.searchsorted by `method`, or from each
    particle's count of queries ("counts": a scatter-add and a cumulative sum; "repeat":
    jnp.repeat of the counts)."""
    n = scaled.shape[0]
    if method in ("counts", "repeat"):
        # Queries 0 .. N-1 at or below scaled[j]: floor(scaled[j]) + 1 (exact: the queries are
        # integers), all of them for the last particle (the clip of the search).
        below = jnp.clip(jnp.floor(scaled).astype(jnp.int32) + 1, 0, n).at[-1].set(n)
        if method == "counts":  # query i's ancestor: the particles with below[j] <= i
            ones = jnp.zeros(n + 1, jnp.int32).at[below].add(1)
            return jnp.cumsum(ones[:n], dtype=jnp.int32)
        # particle j takes the queries from its predecessor's below to its own
        counts = jnp.diff(below, prepend=jnp.int32(0))
        return jnp.repeat(jnp.arange(n, dtype=jnp.int32), counts, total_repeat_length=n)
    queries = jnp.arange(n, dtype=scaled.dtype)
    found = jnp.searchsorted(scaled, queries, side="left", method=method)
    return jnp.minimum(found, n - 1).astype(jnp.int32)


def cumulative(w: jax.Array) -> jax.Array:
    """Cumulative sum of non-negative weights, non-decreasing. XLA computes a long cumsum in
    blocks and adds each block's offset on its own, so the sum can step back by an ulp where a
    block starts (seen on the CPU); the running max removes those steps (the searches need a
    sorted array, and both versions must search the same one)."""
    return lax.cummax(jnp.cumsum(w))


def resample(w: jax.Array, u: jax.Array, particles: Particles, *,
             search: Search) -> tuple[jax.Array, Particles, jax.Array]:
    """Systematic resampling of N particles with normalised weights w (max 1) and offset u in
    [0, 1): (ancestors, resampled particles, log of the mean weight)."""
    n = w.shape[0]
    cdf = cumulative(w)
    total = cdf[-1]
    # Query i (i + u of N strata) falls in particle j's stretch of the cdf when
    # scaled[j - 1] < i <= scaled[j]. cdf is non-decreasing, so scaled is sorted.
    scaled = cdf * (n / total) - u
    ancestors = search(scaled)
    return ancestors, jax.tree.map(lambda f: f[ancestors], particles), jnp.log(total / n)


def propagate(particles: Particles, y: jax.Array,
              key: jax.Array) -> tuple[Particles, jax.Array, jax.Array, jax.Array]:
    """Moves every particle one step and weighs it by y: (moved particles, normalised weights,
    their log scale, the systematic offset u)."""
    k_move, k_u = jax.random.split(key)
    noise = jax.random.normal(k_move, particles["x"].shape, jnp.float32)
    x = PHI * particles["x"] + SIGMA * noise
    logw = -0.5 * jnp.square((y - x) / TAU)
    top = jnp.max(logw)
    moved = {"x": x, "x_prev": particles["x"], "path_sum": particles["path_sum"] + x,
             "origin": particles["origin"]}
    return moved, jnp.exp(logw - top), top, jax.random.uniform(k_u, (), jnp.float32)


def step(particles: Particles, inputs: tuple[jax.Array, jax.Array], *,
         search: Search) -> tuple[Particles, tuple[jax.Array, jax.Array, jax.Array]]:
    """One filter step: propagate, weigh, resample. Emits the log-likelihood increment
    log p(y_t | y_1..t-1), the filtered mean E[x_t | y_1..t] and the distinct ancestors."""
    y, key = inputs
    moved, w, top, u = propagate(particles, y, key)
    mean = jnp.sum(w * moved["x"]) / jnp.sum(w)
    ancestors, particles, log_mean_w = resample(w, u, moved, search=search)
    loglik = top + log_mean_w - jnp.log(TAU * np.sqrt(2 * np.pi)).astype(jnp.float32)
    # ancestors are sorted: each distinct one starts a run
    distinct = 1 + jnp.sum(ancestors[1:] != ancestors[:-1], dtype=jnp.int32)
    return particles, (loglik, mean, distinct)


def run(particles: Particles, ys: jax.Array, key: jax.Array, *,
        search: Search) -> tuple[Particles, tuple[jax.Array, jax.Array, jax.Array]]:
    """The filter over all observations in one scan: final particles and per-step outputs."""
    keys = jax.random.split(key, ys.shape[0])
    return lax.scan(partial(step, search=search), particles, (ys, keys))


def initial_particles(key: jax.Array, n: int) -> Particles:
    """N draws from the state's stationary law N(0, SIGMA**2 / (1 - PHI**2))."""
    x = jax.random.normal(key, (n,), jnp.float32) * np.float32(SIGMA / np.sqrt(1 - PHI**2))
    return {"x": x, "x_prev": x, "path_sum": jnp.zeros(n, jnp.float32),
            "origin": jnp.arange(n, dtype=jnp.int32)}


def observations(rng: np.random.Generator, steps: int) -> np.ndarray:
    """A path of the model from its stationary law, observed with noise."""
    x, ys = rng.normal(0.0, SIGMA / np.sqrt(1 - PHI**2)), []
    for _ in range(steps):
        x = PHI * x + SIGMA * rng.normal()
        ys.append(x + TAU * rng.normal())
    return np.asarray(ys, np.float32)


def kalman(ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact filter (float64): per step log p(y_t | y_1..t-1) and E[x_t | y_1..t]."""
    m, p = 0.0, SIGMA**2 / (1 - PHI**2)
    logliks, means = [], []
    for y in ys.astype(np.float64):
        m, p = PHI * m, PHI**2 * p + SIGMA**2
        s = p + TAU**2
        logliks.append(-0.5 * (np.log(2 * np.pi * s) + (y - m) ** 2 / s))
        gain = p / s
        m, p = m + gain * (y - m), (1 - gain) * p
        means.append(m)
    return np.asarray(logliks), np.asarray(means)


def check(checks: Checks, stage: tuple[Any, ...], ends: tuple[Any, Any], ys: np.ndarray,
          n: int) -> None:
    """Exact agreement of the two versions (stage and whole filter), then the filter against
    the Kalman filter."""
    (w, u, moved), (one_fast, one_base) = stage
    cdf = jax.jit(cumulative)(w)
    checks.true("the cumulative weights are sorted (the search's precondition)",
                bool(jmp.is_sorted(cdf)))
    checks.equal("one step's ancestors and resampled particles equal jnp's", one_fast, one_base)
    checks.true("ancestors are sorted and in range", bool(
        jmp.is_sorted(one_fast[0]) & (one_fast[0][0] >= 0) & (one_fast[0][-1] < n)))
    (end_fast, out_fast), (end_base, out_base) = ends
    checks.equal("every step's ancestors equal jnp's (final particles: ancestry ids, path "
                 "sums, states)", end_fast, end_base)
    checks.equal("every step's log-likelihood, filtered mean, distinct ancestors equal jnp's",
                 out_fast, out_base)
    loglik, mean, distinct = (np.asarray(o, np.float64) for o in out_fast)
    want_loglik, want_mean = kalman(ys)
    # Monte Carlo error: the log-likelihood estimate's sd is about sqrt(steps / N) here (a few
    # hundredths at 2**14 particles); the filtered mean's about its posterior sd / sqrt(N).
    err = abs(loglik.sum() - want_loglik.sum())
    checks.true(f"log-likelihood {loglik.sum():.3f} within 0.1 + 10 sqrt(steps / N) of the "
                f"Kalman filter's {want_loglik.sum():.3f}",
                err <= 0.1 + 10 * np.sqrt(len(ys) / n), f"off by {err:.3f}")
    worst = np.max(np.abs(mean - want_mean))
    checks.true(f"filtered means within 0.02 + 3 / sqrt(N) of the Kalman filter's "
                f"(worst {worst:.4f})", worst <= 0.02 + 3 / np.sqrt(n))
    print(f"  distinct ancestors per step: mean {distinct.mean() / n:.1%} of the particles")


def sweep(stage_args: tuple[Any, ...], n: int, reps: int) -> dict[str, float]:
    """The resampling stage alone with every search spelling (compare_all only while small)."""
    spellings: dict[str, Search] = {"jax_mergepath": jmp_search}
    for method in JNP_SEARCHES:
        if method != "compare_all" or n <= COMPARE_ALL_MAX:
            spellings[f"jnp {method}"] = partial(jnp_search, method=method)
    times = {}
    for name, search in spellings.items():
        times[name] = time_per_call(jax.jit(partial(resample, search=search)), stage_args, reps)
        print(f"  sweep: resampling stage with {name:18s} {times[name] * 1e3:9.3f} ms")
    return times


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__, SIZES)
    parser.add_argument("--particles", type=int, help=f"particles N (at most {MAX_PARTICLES})")
    parser.add_argument("--steps", type=int, help="observations filtered per scan")
    parser.add_argument("--jnp-search", choices=JNP_SEARCHES, default="counts",
                        help="the jnp-only version's search (default: counts, the fastest "
                             "measured on an H100)")
    parser.add_argument("--sweep", action="store_true",
                        help="also time the resampling stage with every search spelling")
    args = resolve(parser.parse_args(argv), SIZES)
    if not 2 <= args.particles <= MAX_PARTICLES or args.steps < 1:
        parser.error(f"need 2 <= --particles <= {MAX_PARTICLES} and --steps >= 1")
    if args.jnp_search == "compare_all" and args.particles > COMPARE_ALL_MAX:
        parser.error(f"--jnp-search compare_all needs --particles <= {COMPARE_ALL_MAX}")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    n = args.particles
    header("smc_resampling", args, particles=n, steps=args.steps, jnp_search=args.jnp_search)
    ys = observations(np.random.default_rng(args.seed), args.steps)
    k_init, k_run, k_stage = jax.random.split(jax.random.key(args.seed), 3)
    particles = initial_particles(k_init, n)
    base_search = partial(jnp_search, method=args.jnp_search)
    fast, base = (jax.jit(partial(run, search=s)) for s in (jmp_search, base_search))
    inputs = (particles, jnp.asarray(ys), k_run)
    ends = (fast(*inputs), base(*inputs))
    # The stage's inputs: the filter's final particles moved and weighed by one more step.
    moved, w, _, u = jax.jit(propagate)(ends[0][0], jnp.float32(ys[-1]), k_stage)
    stage_args = (w, u, moved)
    fast_stage, base_stage = (jax.jit(partial(resample, search=s))
                              for s in (jmp_search, base_search))
    one = [stage(*stage_args)[:2] for stage in (fast_stage, base_stage)]

    checks = Checks()
    check(checks, (stage_args, one), ends, ys, n)
    timings = compare_timings(fast, base, inputs, reps=args.reps, steps=args.steps,
                              base_name=f"jnp {args.jnp_search}")
    timings |= compare_stage(fast_stage, base_stage, stage_args, reps=args.reps,
                             what="cumulative sum + systematic search + gather of 4 fields")
    extra = {"particles": n, "jnp_search": args.jnp_search}
    if args.sweep:
        extra["sweep_s"] = sweep(stage_args, n, args.reps)
    return result(checks, timings, **extra)


if __name__ == "__main__":
    main()
