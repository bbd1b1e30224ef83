"""Derivatives of the sharded permutations (sorts and merges), per device: forward and reverse
mode, as `jnp.sort`'s (the derivative of a permutation).

Contract: `permutation(run, move, back, arrays, nout, positions)` returns run(arrays, positions)
(the outputs, then the global positions when asked) with a custom JVP: the primal pass also
returns each output element's `source` (its global position in the inputs); tangents of the
floating inputs move as the elements do (`move(arrays, source, tangents)`: the same sharded call
moving the tangents as values), a linear map whose transpose (`back(arrays, source,
cotangents)`) sends each cotangent home: a sort of the cotangents by their elements' home
positions (the same machinery). So jax.jvp, jax.grad and vmap of either work on sharded calls,
inside shard_map and in a custom_partitioning call's per-device program alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero, linear_call

from jax_mergepath._sharded import linear_batching  # noqa: F401 - vmap of linear_call
from jax_mergepath._sharded.layout import Axes, float0_zeros
from jax_mergepath._sharded.sort import sort_local


def _inexact(x: jax.Array) -> bool:
    return jnp.issubdtype(x.dtype, jnp.inexact)


def given(tangent) -> bool:
    """A tangent that is not a symbolic zero (an input jax differentiates)."""
    return not isinstance(tangent, SymbolicZero)


def permutation(run: Callable, move: Callable, back: Callable, arrays: list[jax.Array],
                fed: list[tuple[int, ...]], positions: bool) -> list[jax.Array]:
    """run(arrays, positions) with derivatives (module docstring): fed[j], the inputs whose
    elements output j holds (outputs past len(fed): integer, no tangent). The outputs whose
    floating inputs have tangents (diff) get theirs: move(arrays, source, the given tangents of
    their inputs, diff, present: which inputs gave one) -> theirs; back(arrays, source, their
    cotangents, diff, present) -> the given inputs' cotangents (linear_call's transpose needs
    every linear operand undefined: inputs without tangents are left out, zeros inside)."""
    if not any(_inexact(arrays[f[0]]) for f in fed):
        return run(arrays, positions)

    @jax.custom_jvp
    def f(arrays):
        return run(arrays, positions)

    @functools.partial(f.defjvp, symbolic_zeros=True)
    def f_jvp(primals, tangents):
        (arrays,), (tans,) = primals, tangents
        diff = tuple(j for j, ins in enumerate(fed) if _inexact(arrays[ins[0]])
                     and any(given(tans[i]) for i in ins))
        *outs, source = run(arrays, True)
        present = tuple(given(tans[i]) for j in diff for i in fed[j])
        ins = [tans[i] for j in diff for i in fed[j] if given(tans[i])]
        got = linear_call(lambda res, ts: move(res[0], res[1], ts, diff, present),
                          lambda res, cts: back(res[0], res[1], cts, diff, present),
                          (arrays, source), ins) if diff else []
        out_tans = [jnp.zeros_like(o) if _inexact(o) else float0_zeros(o) for o in outs]
        for j, t in zip(diff, got, strict=True):
            out_tans[j] = t
        primal_out = [*outs, source] if positions else outs
        if positions:
            out_tans.append(float0_zeros(source))
        return primal_out, out_tans

    return f(arrays)


def home(keys: jax.Array, cts: list[jax.Array], axes: Axes, op: str) -> list[jax.Array]:
    """cts sorted by their home keys (unique integers, split as the cotangents): each arrives
    at the device and place of its key."""
    return sort_local([keys], cts, axes, descending=False, reverse_ties=False, positions=False,
                      op=op)[1:]
