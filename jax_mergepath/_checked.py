"""The opt-in check of the sorted-input precondition: the check_sorted_inputs switch, and
require_sorted, which the functions call on every input that must be sorted.

Contract: the switch is read when a function is traced. Off (the default), require_sorted emits
nothing, so the traced program is exactly the unchecked one. On, each call adds one is_sorted
pass over the valid part of the input and one jax.experimental.checkify check whose message
names the function, the argument and the first unsorted row (row-major over the batch).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import checkify

from jax_mergepath._bits import take_along_bits
from jax_mergepath._dispatch import is_sorted_rows
from jax_mergepath._dtypes import position_dtype

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "jax_mergepath_check_sorted_inputs", default=False
)


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

    The switch is read at trace time: a function that ``jax.jit`` traced before the switch was
    turned on keeps its cached, unchecked program (trace a new ``jax.jit`` object inside the
    block, or call ``jax.clear_caches()``). It is per thread and per asyncio task
    (a context variable).

    Args:
        enabled: turn the checks on (True) or off (False) inside the block; blocks nest.

    Returns:
        A context manager.

    Raises:
        TypeError: ``enabled`` not a bool.

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
    token = _ENABLED.set(bool(enabled))
    try:
        yield
    finally:
        _ENABLED.reset(token)


def _valid_part(x: jax.Array, begin: jax.Array | None, end: jax.Array | None) -> jax.Array:
    """x (rows along the last axis) with every element outside [begin, end) of its row replaced
    by the nearest element inside (equal neighbours are sorted), so is_sorted of the result
    checks the range alone; an empty range gives a constant row. begin / end: integers (*batch),
    within [0, d], or None (0 / d); positions are position_dtype(d) (int64 on an axis of 2**31
    elements or more)."""
    d = x.shape[-1]
    if d == 0:
        return x
    dtype = position_dtype(d)
    pos = lax.broadcasted_iota(dtype, x.shape, x.ndim - 1)
    lo = jnp.zeros(x.shape[:-1], dtype) if begin is None else begin.astype(dtype)
    hi = jnp.full(x.shape[:-1], d, dtype) if end is None else end.astype(dtype)
    hi = jnp.maximum(hi - 1, lo)
    idx = jnp.minimum(jnp.clip(pos, lo[..., None], hi[..., None]), d - 1)
    return take_along_bits(x, idx, -1)


def require_sorted(
    x: jax.Array,
    name: str,
    op: str,
    descending: bool,
    begin: jax.Array | None = None,
    end: jax.Array | None = None,
) -> None:
    """With check_sorted_inputs on, a checkify check that every row of x (sorted axis LAST) is
    sorted over [begin, end) (default: all of it); nothing otherwise. `name` is how the message
    names the input (no braces: it is a format string)."""
    if not _ENABLED.get():
        return
    part = x if begin is None and end is None else _valid_part(x, begin, end)
    ok = is_sorted_rows(part, descending=descending)
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
