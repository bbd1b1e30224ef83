"""The selection primitive `topk_p` (top_k of rows): abstract evaluation, lowering to the FFI
target jmp_top_k (or, where tuning/topk.h routes it, to the package's sort or XLA's top_k of the
same order keys), batching and JVP rules, and the CUDA workspace sizing.

topk_p(keys, *, k, largest, key_class, route=-1, strategy=-1) -> [values, indices]
  keys (*B, L) of a dtype of 1, 2, 4 or 8 whole bytes; key_class (KeyClass) says how its bits
  order (ffi/include/jax_mergepath/topk.h); values (*B, k) the keys' dtype and weak type,
  indices (*B, k) int32: each row's k keys first in (order key descending, index ascending),
  order keys complemented when largest is False. Every leading dimension is a row. route: a
  Route forced (for benchmarks and tests; see `forced_route`), or -1: tuning/topk.h's.
  strategy: the CUDA kernels' strategy forced (a Strategy, with the route KERNEL), or -1:
  tuning/topk.h's, resolved when the call is lowered (a concrete length) or run (a symbolic one).

Contract: the result of a row is unique (a total order of the bits), so every route gives the
same bits: the kernels (CPU, CUDA), `_by_sort` (the stable sort of the order keys, descending)
and `_by_xla` (lax.top_k of the order keys). The route is picked when the call is lowered, per
platform, by tuning/topk.h's topk_route through _cpu, unless a route was forced when the call was
traced (JAX_MERGEPATH_TOPK_ROUTE, or `forced_route`).
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import functools
import math
import os
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from jax_mergepath import _ffi
from jax_mergepath._bits import take_along_bits
from jax_mergepath._dtypes import INT32_LIMIT
from jax_mergepath._lowering import batch_dims_of, ffi_call
from jax_mergepath._primitives import (
    Payload,
    _batched_to_front,
    _eager_impl,
    _typed,
    _weak,
    sort_p,
)


class KeyClass(enum.IntEnum):  # topk.h's TopkKeyClass
    UNSIGNED = 0  # bool, unsigned integers: the bits
    SIGNED = 1  # two's complement: the sign bit flipped
    FLOAT = 2  # sign-magnitude: negative keys' bits all flipped, the others' sign bit


class Route(enum.IntEnum):  # tuning/topk.h's TopkRoute
    KERNEL = 0
    SORT = 1
    XLA = 2


class Strategy(enum.IntEnum):  # tuning/topk.h's TopkStrategy (the CUDA kernels' ways)
    BLOCK = 1  # a block a row, scalar loads
    GRID = 2  # the grid of a row: tile filter, decide kernel (GRID_SORT for k past 1024)
    GRID_SORT = 3
    REGS = 4  # a warp or a block a row, the row in registers
    BLOCK_VEC = 5  # a block a row, 16-byte loads
    STREAM = 6  # the grid of a row: the stream filter (STREAM_SORT for k past 1024)
    STREAM_SORT = 7


ROUTES = {"auto": -1, "kernel": int(Route.KERNEL), "sort": int(Route.SORT),
          "xla": int(Route.XLA)}
# "kernel:<name>": the kernels with a strategy forced (the grid's and the stream's name both of
# their variants: k picks, as tuning/topk.h topk_resolve_strategy does).
STRATEGIES = {"block": Strategy.BLOCK, "block_vec": Strategy.BLOCK_VEC, "regs": Strategy.REGS,
              "grid": Strategy.GRID, "stream": Strategy.STREAM}
# The route forced in this thread or context (`forced_route`), else JAX_MERGEPATH_TOPK_ROUTE's.
_route_forced: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jax_mergepath_topk_route", default=None)


def _parse_route(route: str) -> tuple[int, int] | None:
    """(route, strategy) of a knob's value, or None where it is none of them."""
    if route in ROUTES:
        return ROUTES[route], -1
    kind, _, strategy = route.partition(":")
    if kind == "kernel" and strategy in STRATEGIES:
        return int(Route.KERNEL), int(STRATEGIES[strategy])
    return None


def _route_names() -> list[str]:
    return sorted(ROUTES) + [f"kernel:{name}" for name in sorted(STRATEGIES)]


def forced_route_value() -> tuple[int, int]:
    """(route, strategy) calls traced now take: -1 (tuning/topk.h's, when lowered) or a Route,
    and -1 or the CUDA Strategy forced ("kernel:<name>")."""
    route = _route_forced.get() or os.environ.get("JAX_MERGEPATH_TOPK_ROUTE", "auto")
    parsed = _parse_route(route)
    if parsed is None:
        raise ValueError(
            f"JAX_MERGEPATH_TOPK_ROUTE={route!r}: expected one of {_route_names()}"
        )
    return parsed


@contextlib.contextmanager
def forced_route(route: str) -> Iterator[None]:
    """top_k calls TRACED inside this block run by `route` ("auto", "kernel", "sort", "xla", or
    "kernel:<strategy>" with a strategy of STRATEGIES: the CUDA kernels' way forced, as in the
    GPU tests and the bench), on every platform: for benchmarks and the bit-identity tests (every
    route gives the same bits). Functions traced before it (and cached by jax.jit) keep theirs.
    A strategy that cannot run a call (tuning/topk.h topk_strategy_possible) raises a ValueError
    when the call is lowered for CUDA."""
    if _parse_route(route) is None:
        raise ValueError(f"route={route!r}: expected one of {_route_names()}")
    token = _route_forced.set(route)
    try:
        yield
    finally:
        _route_forced.reset(token)


def order_key(x: jax.Array, key_class: int, largest: bool = True) -> jax.Array:
    """The unsigned order key of every key of x (topk.h TopkOrder::key), complemented when not
    largest: larger order keys come first."""
    bits = x.dtype.itemsize * 8
    udt = np.dtype(f"uint{bits}")
    b = x.astype(udt) if x.dtype == np.bool_ else lax.bitcast_convert_type(x, udt)
    sign = udt.type(1 << (bits - 1))
    ones = udt.type(np.iinfo(udt).max)
    low = udt.type(0) if key_class == KeyClass.UNSIGNED else sign
    high = ones if key_class == KeyClass.FLOAT else low
    negative = (b >> udt.type(bits - 1)) != 0
    u = b ^ jnp.where(negative, high, low)
    return ~u if not largest else u


topk_p = Primitive("jmp_top_k")
topk_p.multiple_results = True


def _topk_abstract_eval(keys, *, k, largest, key_class, route=-1, strategy=-1):
    del largest, key_class, route, strategy
    shape = (*keys.shape[:-1], k)
    # (typed as keys: shard_map's varying axes and explicit-axis rows kept, as merge_p's outputs)
    return [_typed(keys, [keys], shape, keys.dtype, weak_type=_weak(keys)),
            _typed(keys, [keys], shape, np.int32)]


topk_p.def_abstract_eval(_topk_abstract_eval)
topk_p.def_impl(_eager_impl(topk_p))


def _by_sort(keys, *, k, largest, key_class):
    """The first k of the stable descending sort of the order keys (ties: index order)."""
    u = order_key(keys, key_class, largest)
    _, idx = sort_p.bind(u, descending=True, payload=int(Payload.INDEX), keys_needed=False)
    idx = idx[..., :k]
    return [take_along_bits(keys, idx, -1), idx]


def _by_xla(keys, *, k, largest, key_class):
    """XLA's top_k of the order keys (unsigned: its order is theirs)."""
    _, idx = lax.top_k(order_key(keys, key_class, largest), k)
    return [take_along_bits(keys, idx, -1), idx]


def _attrs(k, largest, key_class, strategy) -> dict:
    return {"k": np.int64(k), "largest": bool(largest), "key_class": np.int64(key_class),
            "strategy": np.int64(strategy)}


def _route(cuda: bool, aval, k: int, forced: int) -> Route:
    if forced >= 0:
        return Route(forced)
    length = aval.shape[-1]
    batch = aval.shape[:-1]
    if not isinstance(length, int):  # (decided as for the longest rows: tuning/topk.h's routes)
        return Route(_ffi._cpu.topk_route(cuda, aval.dtype.itemsize, -1, INT32_LIMIT - 1, k))
    rows = math.prod(batch) if all(isinstance(d, int) for d in batch) else -1
    return Route(_ffi._cpu.topk_route(cuda, aval.dtype.itemsize, rows, length, k))


def _lower_route(ctx, keys, route: Route, **params):
    impl = _by_sort if route == Route.SORT else _by_xla
    return mlir.lower_fun(functools.partial(impl, **params), multiple_results=True)(ctx, keys)


def _topk_cpu_lowering(ctx, keys, *, k, largest, key_class, route=-1, strategy=-1):
    aval = ctx.avals_in[0]
    route = _route(False, aval, k, route)
    if route != Route.KERNEL:
        return _lower_route(ctx, keys, route, k=k, largest=largest, key_class=key_class)
    # (the CPU's one way: the strategy is the CUDA kernels')
    return ffi_call(ctx, "jmp_top_k", keys, num_batch_dims=batch_dims_of(aval),
                    **_attrs(k, largest, key_class, -1))


@functools.cache
def _workspace_terms(key_bytes: int, k: int) -> _ffi.Terms:
    return tuple(_ffi._cpu.topk_workspace_bound(key_bytes, k))


def workspace_per_row(key_bytes: int, k: int, length: _ffi.DimSize,
                      strategy: int = -1) -> _ffi.DimSize:
    """int32 elements a row of the CUDA top_k's workspace (tuning/workspace.h) under `strategy`
    (-1: tuning's), for any number of rows: exact for a concrete length, a bound for a symbolic
    one (every strategy's)."""
    if isinstance(length, int):
        return int(_ffi._cpu.topk_workspace_per_row(key_bytes, k, length, strategy))
    return _ffi._per_row(_workspace_terms(key_bytes, k), length)


def resolve_strategy(k: int, length: _ffi.DimSize, forced: int = -1) -> int:
    """The CUDA strategy of rows of `length` keys at k (tuning/topk.h topk_resolve_strategy):
    `forced` where it can run them (a ValueError where it cannot), else tuning's; -1 (decided
    when the call runs) for a symbolic length."""
    if not isinstance(length, int):
        return forced
    resolved = int(_ffi._cpu.topk_resolve_strategy(forced, k, length))
    if resolved < 0:
        raise ValueError(
            f"jax_mergepath.top_k: the forced strategy {Strategy(forced).name.lower()} cannot "
            f"run rows of {length} keys at k={k} (tuning/topk.h topk_strategy_possible)"
        )
    return resolved


def _topk_cuda_lowering(ctx, keys, *, k, largest, key_class, route=-1, strategy=-1):
    _ffi.require_cuda_target("jmp_top_k", "top_k")
    aval = ctx.avals_in[0]
    route = _route(True, aval, k, route)
    if route != Route.KERNEL:
        return _lower_route(ctx, keys, route, k=k, largest=largest, key_class=key_class)
    strategy = resolve_strategy(k, aval.shape[-1], strategy)
    per_row = workspace_per_row(aval.dtype.itemsize, k, aval.shape[-1], strategy)
    workspace = (ShapedArray((*aval.shape[:-1], per_row), np.int32),)
    return ffi_call(ctx, "jmp_top_k", keys, workspace=workspace,
                    num_batch_dims=batch_dims_of(aval),
                    **_attrs(k, largest, key_class, strategy))


mlir.register_lowering(topk_p, _topk_cpu_lowering, platform="cpu")
mlir.register_lowering(topk_p, _topk_cuda_lowering, platform="cuda")


def _topk_batching_rule(args, dims, **params):
    outs = topk_p.bind(*_batched_to_front(args, dims), **params)
    return outs, [0, 0]


batching.primitive_batchers[topk_p] = _topk_batching_rule


def _topk_jvp(primals, tangents, **params):  # (the route stays the primal's)
    (keys,), (tangent,) = primals, tangents
    values, idx = topk_p.bind(keys, **params)
    if type(tangent) is ad.Zero or not jnp.issubdtype(keys.dtype, jnp.inexact):
        value_tangent = ad.Zero(jax.typeof(values).to_tangent_aval())
    else:
        value_tangent = jnp.take_along_axis(tangent, idx, axis=-1)
    return [values, idx], [value_tangent, ad.Zero(jax.typeof(idx).to_tangent_aval())]


ad.primitive_jvps[topk_p] = _topk_jvp
