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

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import linear_call

from jax_mergepath._sharded.layout import Axes
from jax_mergepath._sharded.sort import sort_local


def _inexact(x: jax.Array) -> bool:
    return jnp.issubdtype(x.dtype, jnp.inexact)


def _float0(x: jax.Array) -> np.ndarray:
    return np.zeros(x.shape, jax.dtypes.float0)


def permutation(run: Callable, move: Callable, back: Callable, arrays: list[jax.Array],
                fed: list[tuple[int, ...]], positions: bool) -> list[jax.Array]:
    """run(arrays, positions) with derivatives (module docstring): fed[j], the inputs whose
    elements output j holds (outputs past len(fed): integer, no tangent); the outputs taking
    floating inputs (diff) have tangents: move(arrays, source, tangents of their inputs, diff)
    -> theirs; back(arrays, source, their cotangents, diff) -> those inputs' cotangents."""
    diff = tuple(j for j, f in enumerate(fed) if _inexact(arrays[f[0]]))
    if not diff:
        return run(arrays, positions)

    @jax.custom_jvp
    def f(arrays):
        return run(arrays, positions)

    @f.defjvp
    def f_jvp(primals, tangents):
        (arrays,), (tans,) = primals, tangents
        *outs, source = run(arrays, True)
        ins = [tans[i] for j in diff for i in fed[j]]
        got = linear_call(lambda res, ts: move(res[0], res[1], ts, diff),
                          lambda res, cts: back(res[0], res[1], cts, diff),
                          (arrays, source), ins)
        out_tans = [_float0(o) for o in outs]
        for j, t in zip(diff, got, strict=True):
            out_tans[j] = t
        primal_out = [*outs, source] if positions else outs
        if positions:
            out_tans.append(_float0(source))
        return primal_out, out_tans

    return f(arrays)


def home(keys: jax.Array, cts: list[jax.Array], axes: Axes, op: str) -> list[jax.Array]:
    """cts sorted by their home keys (unique integers, split as the cotangents): each arrives
    at the device and place of its key."""
    return sort_local([keys], cts, axes, descending=False, reverse_ties=False, positions=False,
                      op=op)[1:]
