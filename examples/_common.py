"""What the examples share: the command line (sizes and knobs), checks of the jax_mergepath
results against the jnp-only ones, and the side-by-side timing of the two versions (whole
steps, and the sort or merge stage of a step alone).

Not an example itself: every example imports it (run them from anywhere; Python puts their
folder on the path).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np


def make_parser(doc: str | None, sizes: Mapping[str, Mapping[str, Any]]) -> argparse.ArgumentParser:
    """The options every example has: --size (a preset of the example's knobs), --seed, --reps
    (timed calls per version) and --x64. Examples add their knobs with default None: a knob
    left out takes its value from the size preset (see `resolve`)."""
    presets = "\n".join(
        f"  {size}: " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in knobs.items())
        for size, knobs in sizes.items()
    )
    parser = argparse.ArgumentParser(
        description=(doc or "").strip().splitlines()[0] if doc else None,
        epilog=f"size presets (a knob given on the command line wins):\n{presets}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--size", choices=list(sizes), default="small",
        help="small: seconds on a laptop CPU; gpu: large enough that the sort dominates a step",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed of the data")
    parser.add_argument("--reps", type=int, default=None,
                        help="timed calls per version (default: the size's)")
    parser.add_argument(
        "--x64", action="store_true",
        help="turn on jax_enable_x64 (data dtypes are fixed; jnp.argsort then returns int64)",
    )
    return parser


def resolve(args: argparse.Namespace, sizes: Mapping[str, Mapping[str, Any]]) -> argparse.Namespace:
    """Fills every knob left at None from the chosen size's preset; turns on x64 if asked."""
    for name, value in sizes[args.size].items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    return args


def header(title: str, args: argparse.Namespace, **knobs: Any) -> None:
    """One line for the run: the example, the device, the knobs."""
    dev = jax.devices()[0]
    x64 = "on" if jax.config.jax_enable_x64 else "off"
    print(f"{title}: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, x64 {x64}")
    print("  " + ", ".join(f"{k}={v}" for k, v in {"size": args.size, **knobs}.items()))


class Checks:
    """Comparisons of the jax_mergepath version's results with the jnp-only version's: each
    prints a line and raises AssertionError on a mismatch (also under python -O)."""

    def __init__(self) -> None:
        self.results: dict[str, bool] = {}

    def _record(self, name: str, ok: bool, detail: str) -> None:
        print(f"  {'ok ' if ok else 'BAD'} {name}")
        self.results[name] = ok
        if not ok:
            raise AssertionError(f"{name}: {detail}")

    def equal(self, name: str, got: Any, want: Any) -> None:
        """Exact equality of two pytrees of arrays (same structure, shapes and values)."""
        got_leaves, got_tree = jax.tree.flatten(got)
        want_leaves, want_tree = jax.tree.flatten(want)
        if got_tree != want_tree:
            self._record(name, False, f"structures differ: {got_tree} vs {want_tree}")
        for g, w in zip(got_leaves, want_leaves, strict=True):
            g, w = np.asarray(g), np.asarray(w)
            if g.shape != w.shape or not np.array_equal(g, w, equal_nan=True):
                bad = (np.argwhere(g != w)[:3].tolist() if g.shape == w.shape
                       else f"shapes {g.shape} vs {w.shape}")
                self._record(name, False, f"not equal (first differences at {bad})")
        self._record(name, True, "")

    def close(self, name: str, got: Any, want: Any, *, rtol: float, atol: float) -> None:
        """|got - want| <= atol + rtol * |want| elementwise, for pytrees of float arrays."""
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
            if g.shape != w.shape or not np.allclose(g, w, rtol=rtol, atol=atol):
                err = np.max(np.abs(g - w)) if g.shape == w.shape else "shape"
                self._record(name, False, f"max |difference| {err} > atol {atol} + rtol {rtol}")
        self._record(name, True, "")

    def true(self, name: str, ok: bool, detail: str = "") -> None:
        """A property of the results (conservation, a bound) that must hold."""
        self._record(name, bool(ok), detail)


def time_per_call(fn: Callable[..., Any], args: Sequence[Any], reps: int) -> float:
    """User-visible seconds per call: one warm-up call (compiles), then `reps` calls issued back
    to back and blocked on once at the end, so dispatch overlaps the device work as in a loop."""
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    outs = [fn(*args) for _ in range(reps)]
    jax.block_until_ready(outs)
    return (time.perf_counter() - start) / reps


def _fmt(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:8.3f} s "
    if seconds >= 1e-3:
        return f"{seconds * 1e3:8.3f} ms"
    return f"{seconds * 1e6:8.1f} us"


def compare_timings(
    fast: Callable[..., Any], base: Callable[..., Any], args: Sequence[Any], *, reps: int,
    steps: int, fast_name: str = "jax_mergepath", base_name: str = "jnp only",
) -> dict[str, Any]:
    """Times both jitted functions on the same arguments and prints them side by side (per call
    and per step of the call's scan), with the speedup of `fast` over `base`."""
    t_fast = time_per_call(fast, args, reps)
    t_base = time_per_call(base, args, reps)
    print(f"  timing: {reps} back-to-back calls each, after a warm-up call; "
          f"device: {jax.devices()[0].device_kind}")
    print(f"  {'':16s} {'per call':>11s} {'per step':>11s}")
    for name, t in ((fast_name, t_fast), (base_name, t_base)):
        print(f"  {name:16s} {_fmt(t):>11s} {_fmt(t / steps):>11s}")
    print(f"  speedup: {t_base / t_fast:.2f}x")
    return {
        "device": jax.devices()[0].device_kind,
        "jmp_s_per_call": t_fast,
        "jnp_s_per_call": t_base,
        "jmp_s_per_step": t_fast / steps,
        "jnp_s_per_step": t_base / steps,
        "speedup": t_base / t_fast,
        "steps": steps,
        "reps": reps,
    }


def compare_stage(
    fast: Callable[..., Any], base: Callable[..., Any], args: Sequence[Any], *, reps: int,
    what: str,
) -> dict[str, Any]:
    """Times the step's sort or merge stage alone (what jax_mergepath replaces: `fast` and
    `base` jitted, on the same arguments) and prints it beside the whole step's timing: how much
    of a step's speedup the stage could give, the rest of the step being the same code."""
    t_fast = time_per_call(fast, args, reps)
    t_base = time_per_call(base, args, reps)
    print(f"  the stage alone ({what}): jax_mergepath {_fmt(t_fast).strip()}, jnp only "
          f"{_fmt(t_base).strip()}, speedup {t_base / t_fast:.2f}x")
    return {"jmp_stage_s": t_fast, "jnp_stage_s": t_base, "stage_speedup": t_base / t_fast}


def result(checks: Checks, timings: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """What an example's main returns: its timings, every check's outcome, and `ok`."""
    return {**timings, "checks": dict(checks.results),
            "ok": bool(checks.results) and all(checks.results.values()), **extra}
