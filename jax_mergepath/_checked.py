"""The opt-in check of the sorted-input precondition: the check_sorted_inputs switch, and
require_sorted, which the functions call on every input that must be sorted.

Contract: the switch is read when a function is traced. Off (the default), require_sorted emits
nothing, so the traced program is exactly the unchecked one. On, each call adds one is_sorted
pass over the valid part of the input and one jax.experimental.checkify check whose message
names the function, the argument and the first unsorted row (row-major over the batch).

The switch is a JAX config state that enters jax.jit's cache key and the trace context, so a
checked trace and an unchecked one are never the same cache entry, whichever came first and
whichever jit object (a context variable of our own would not be in jax's keys: a program traced
outside the block ran unchecked inside it, and a checked trace leaked out of it). It is made by
jax's private `jax._src.config.bool_state` (jax 0.10.2 to 0.12); where that fails, the checked
mode raises a RuntimeError naming the cause, and everything else works unchecked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import checkify

from jax_mergepath._bits import from_bits, take_along_bits, to_bits
from jax_mergepath._dtypes import position_dtype
from jax_mergepath._sharded import Op, call
from jax_mergepath._sharded.layout import full_spec, typed_sharding

STATE_NAME = "jax_mergepath_check_sorted_inputs"


def _make_state() -> tuple[Any, Exception | None]:
    """(the switch's JAX config state, None), or (None, why it could not be made)."""
    try:
        from jax._src import config as jax_config

        existing = getattr(jax_config, "config_states", {}).get(STATE_NAME)
        if existing is not None:  # (the package imported again: jax keeps its states)
            return existing, None
        state = jax_config.bool_state(
            name=STATE_NAME,
            default=False,
            help="jax_mergepath: check that the inputs that must be sorted are sorted (a "
            "checkify check in every traced call; jax_mergepath.check_sorted_inputs()).",
            include_in_jit_key=True,
            include_in_trace_context=True,
        )
        return state, None
    except Exception as err:  # private API: any failure leaves the checked mode unavailable
        return None, err


_STATE, _STATE_ERROR = _make_state()


def checks_enabled() -> bool:
    """Whether the functions traced now emit the checks (read at trace time)."""
    return _STATE is not None and bool(_STATE.value)


@contextlib.contextmanager
def check_sorted_inputs(enabled: bool = True) -> Iterator[None]:
    """Within this block, functions traced check that their sorted inputs are sorted.

    The inputs checked: ``merge``'s ``a`` and ``b`` and ``merge_by_key``'s keys (the valid
    prefix of each row when ``a_length`` / ``b_length`` are given), each run of ``merge_runs``,
    ``co_rank``'s ``a`` and ``b``, ``searchsorted``'s ``a`` (after ``sorter``), and ``v`` when
    ``sorted_v=True``; in the direction asked (``descending``). A failing check raises an error
    naming the function, the argument and the first unsorted row: its index over the
    dimensions other than the sorted axis, row-major. Under ``jax.vmap`` that index is within
    the mapped function's arguments.

    Why a switch that emits ``jax.experimental.checkify`` checks: checking costs an extra pass
    over every input, so it must be asked for; a check that raises from inside a compiled
    program has to be carried out of it as data, which is what checkify does, under ``jax.jit``,
    ``jax.vmap`` and ``jax.grad`` alike. Called eagerly, the functions raise at once; under
    ``jax.jit``, wrap the function with ``checkify.checkify`` and call ``err.throw()`` (a
    check traced without it fails to compile, as checkify's own checks do). With the switch
    off nothing is emitted and the compiled program is unchanged.

    The switch is read at trace time and is part of ``jax.jit``'s cache key: a function traced
    inside the block and the same function traced outside it are two programs, whichever came
    first and whether or not they share a ``jax.jit`` object (a checked program never runs
    outside the block, an unchecked one never inside it). It is per thread, and nests. It is
    JAX's config option ``jax_mergepath_check_sorted_inputs``: ``jax.config.update`` (or the
    environment variable ``JAX_MERGEPATH_CHECK_SORTED_INPUTS=1``) turns it on for the whole
    process.

    Args:
        enabled: turn the checks on (True) or off (False) inside the block; blocks nest.

    Returns:
        A context manager.

    Raises:
        TypeError: ``enabled`` not a bool.
        RuntimeError: this jax has no config state for the switch (see the module docstring).

    Example:
        >>> import jax, jax.numpy as jnp, jax_mergepath as jmp
        >>> from jax.experimental import checkify
        >>> merge = checkify.checkify(jax.jit(jmp.merge))
        >>> with jmp.check_sorted_inputs():
        ...     err, out = merge(jnp.array([[1, 2], [4, 3]]), jnp.array([[0, 5], [1, 2]]))
        >>> print(err.get())  # doctest: +ELLIPSIS
        jax_mergepath.merge: a is not sorted in ascending order: first unsorted row at batch
        index [1]...
    """
    if not isinstance(enabled, bool | np.bool_):
        raise TypeError(
            f"jax_mergepath.check_sorted_inputs: enabled must be a Python bool, got {enabled!r}"
        )
    if _STATE is None:
        raise RuntimeError(
            f"jax_mergepath.check_sorted_inputs: the checked mode needs a JAX config state in "
            f"jax.jit's cache key (jax._src.config.bool_state(..., include_in_jit_key=True)), "
            f"which failed on jax {jax.__version__}: {_STATE_ERROR!r}. Use a jax this package "
            f"supports (0.10.2 to 0.12), or check inputs yourself with jax_mergepath.is_sorted"
        ) from _STATE_ERROR
    with _STATE(bool(enabled)):
        yield


def _valid_part(x: jax.Array, begin: jax.Array | None, end: jax.Array | None,
                axis_name=None) -> jax.Array:
    """x (rows along the last axis) with every element outside [begin, end) of its row replaced
    by the nearest element inside (equal neighbours are sorted), so is_sorted of the result
    checks the range alone; an empty range gives a constant row. begin / end: integers (*batch),
    within [0, d], or None (0 / d); positions are position_dtype(d) (int64 on an axis of 2**31
    elements or more). With axis_name (inside shard_map), x is this device's shard of rows split
    along that axis and begin / end are positions in the whole rows."""
    d = x.shape[-1]
    if d == 0:
        return x
    g = 1 if axis_name is None else lax.psum(1, axis_name)
    whole = g * d
    dtype = position_dtype(whole)
    pos = lax.broadcasted_iota(dtype, x.shape, x.ndim - 1)
    if axis_name is not None:
        pos = pos + lax.axis_index(axis_name).astype(dtype) * d
    lo = jnp.zeros(x.shape[:-1], dtype) if begin is None else begin.astype(dtype)
    hi = jnp.full(x.shape[:-1], whole, dtype) if end is None else end.astype(dtype)
    hi = jnp.minimum(jnp.maximum(hi - 1, lo), whole - 1)
    lo = jnp.minimum(lo, whole - 1)
    first, last = (_element_at(x, p, pos, axis_name) for p in (lo, hi))
    return jnp.where(pos < lo[..., None], first, jnp.where(pos > hi[..., None], last, x))


def _element_at(x: jax.Array, p: jax.Array, pos: jax.Array, axis_name) -> jax.Array:
    """x's element at position p of each row (pos: x's positions), bit for bit, shaped to
    broadcast against x; with axis_name, from the device that holds it."""
    local = p[..., None] - pos[..., :1]
    if axis_name is None and _split_in_type(x):  # (explicit axes refuse the gather: the sum
        bits = to_bits(x)                           # of a row's one hit and zeros)
        hit = jnp.where(pos == p[..., None], bits, jnp.zeros_like(bits))
        return from_bits(jnp.sum(hit, axis=-1, keepdims=True, dtype=bits.dtype), x.dtype,
                         x.weak_type)
    if axis_name is None:
        return take_along_bits(x, local, -1)
    d = x.shape[-1]
    mine = (local >= 0) & (local < d)
    bits = to_bits(take_along_bits(x, jnp.clip(local, 0, d - 1), -1))
    bits = lax.psum(jnp.where(mine, bits, jnp.zeros_like(bits)), axis_name)
    return from_bits(bits, x.dtype, x.weak_type)


def _split_in_type(x: jax.Array) -> bool:
    """Whether x's type splits its last axis over explicit mesh axes."""
    sharding = typed_sharding(x)
    return sharding is not None and full_spec(sharding.spec, x.ndim)[-1] is not None


def require_sorted(
    x: jax.Array,
    name: str,
    op: str,
    descending: bool,
    begin: jax.Array | None = None,
    end: jax.Array | None = None,
    axis_name=None,
) -> None:
    """With check_sorted_inputs on, a checkify check that every row of x (sorted axis LAST) is
    sorted over [begin, end) (default: all of it); nothing otherwise. `name` is how the message
    names the input (no braces: it is a format string). With axis_name (inside shard_map), x is
    this device's shard of rows split along it: the whole rows are checked; an array split over
    devices is checked shard by shard (the sharded layer's is_sorted, never a gather)."""
    if not checks_enabled():
        return
    part = x if begin is None and end is None else _valid_part(x, begin, end, axis_name)
    (ok,) = call(Op("is_sorted", op, descending=descending), [part], axis_name)
    what = (f"jax_mergepath.{op}: {name} is not sorted in "
            f"{'descending' if descending else 'ascending'} order")
    hint = ("sort it first, or pass the direction it is sorted in (descending); "
            "jax_mergepath.check_sorted_inputs is on")
    if ok.ndim == 0:
        checkify.check(ok, f"{what}; {hint}")
        return
    if ok.size == 0:
        return
    first = jnp.unravel_index(jnp.argmin(ok.reshape(-1)), ok.shape)  # the first False
    row = ", ".join(f"{{r{i}}}" for i in range(ok.ndim))
    checkify.check(
        jnp.all(ok),
        f"{what}: first unsorted row at batch index [{row}]; {hint}",
        **{f"r{i}": r for i, r in enumerate(first)},
    )
