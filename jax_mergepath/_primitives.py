"""JAX primitives of jax_mergepath: abstract evaluation, lowering to the FFI targets, batching
and JVP rules.

Contract: operands are already validated and moved so the merged axis is LAST; every leading
dimension is a batch row. Batching rules only move the vmapped dimension to the front (leading
dimensions are rows to the kernel), so any vmap, nested or not, is ONE kernel call.

merge_p(a, b, a_valid, b_valid, *values, descending, payload, runs) -> [out, payload_out?]
  a (*B, m), b (*B, n), a_valid / b_valid int32 (*B); payload NONE / INDEX / VALUE (values:
  va (*B, m), vb (*B, n)). runs=True: a == b == x (*B, d), a_valid == b_valid == split; the
  kernel reads only a. out is (*B, m + n) (runs: (*B, d)).
co_rank_p(k, a, b, descending) -> i: k int32 (*B, q), a (*B, m), b (*B, n); i int32 (*B, q).
is_sorted_p(x, descending) -> ok: x (*B, d); ok bool (*B).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from jax_mergepath import _ffi


class Payload(enum.IntEnum):
    NONE = 0
    INDEX = 1
    VALUE = 2


# ---------------------------------------------------------------- merge_p

merge_p = Primitive("jmp_merge")
merge_p.multiple_results = True


def _merge_out_length(a_shape: Sequence[int], b_shape: Sequence[int], runs: bool) -> int:
    return a_shape[-1] if runs else a_shape[-1] + b_shape[-1]


def _merge_abstract_eval(a, b, a_valid, b_valid, *values, descending, payload, runs):
    del a_valid, b_valid, descending
    shape = (*a.shape[:-1], _merge_out_length(a.shape, b.shape, runs))
    outs = [ShapedArray(shape, a.dtype)]
    if payload == Payload.INDEX:
        outs.append(ShapedArray(shape, np.int32))
    elif payload == Payload.VALUE:
        outs.append(ShapedArray(shape, values[0].dtype))
    return outs


merge_p.def_abstract_eval(_merge_abstract_eval)


def _eager_impl(primitive: Primitive):
    """Eager evaluation = the jitted primitive (one compiled executable per parameter set)."""

    @functools.cache
    def jitted(params: tuple):
        return jax.jit(functools.partial(primitive.bind, **dict(params)))

    def impl(*args, **params):
        with jax.disable_jit(False):  # under jax.disable_jit() the jit would call impl again
            return jitted(tuple(sorted(params.items())))(*args)

    return impl


merge_p.def_impl(_eager_impl(merge_p))


def _merge_cpu_lowering(ctx, *args, descending, payload, runs):
    rule = jax.ffi.ffi_lowering("jmp_merge")
    return rule(ctx, *args, descending=descending, payload=np.int64(payload), runs=runs)


def _merge_cuda_lowering(ctx, *args, descending, payload, runs):
    a_aval, b_aval = ctx.avals_in[0], ctx.avals_in[1]
    payload_bytes = {
        Payload.NONE: 0,
        Payload.INDEX: 4,
        Payload.VALUE: ctx.avals_in[-1].dtype.itemsize if payload == Payload.VALUE else 0,
    }[Payload(payload)]
    rows = int(np.prod(a_aval.shape[:-1], dtype=np.int64))
    workspace = _ffi.merge_workspace_elements(
        a_aval.dtype.itemsize,
        payload_bytes,
        rows,
        _merge_out_length(a_aval.shape, b_aval.shape, runs),
    )
    ws_aval = ShapedArray((workspace,), np.int32)
    ctx = ctx.replace(avals_out=[*ctx.avals_out, ws_aval])
    rule = jax.ffi.ffi_lowering("jmp_merge")
    results = rule(ctx, *args, descending=descending, payload=np.int64(payload), runs=runs)
    return results[:-1]  # the workspace is internal


mlir.register_lowering(merge_p, _merge_cpu_lowering, platform="cpu")
mlir.register_lowering(merge_p, _merge_cuda_lowering, platform="cuda")


def _move_to_front(x, d, size):
    """Batch dimension d of x to axis 0; broadcast an unbatched operand (d is None)."""
    if d is None:
        return jnp.broadcast_to(x, (size, *x.shape))
    return jnp.moveaxis(x, d, 0)


def _batched_to_front(args, dims) -> list:
    """Every operand with the vmapped dimension first (a leading row dimension to the kernel)."""
    size = next(x.shape[d] for x, d in zip(args, dims, strict=True) if d is not None)
    return [_move_to_front(x, d, size) for x, d in zip(args, dims, strict=True)]


def _merge_batching_rule(args, dims, **params):
    outs = merge_p.bind(*_batched_to_front(args, dims), **params)
    return outs, [0] * len(outs)


batching.primitive_batchers[merge_p] = _merge_batching_rule


def _float_tangent(x) -> bool:
    return jnp.issubdtype(x.dtype, jnp.inexact)


def _gather_tangent(tangents, primals, idx, runs: bool):
    """Tangent of a permuted output: gather concat(tangents) by idx (zeros stay symbolic)."""
    if all(type(t) is ad.Zero for t in tangents) or not _float_tangent(primals[0]):
        aval = ShapedArray(idx.shape, primals[0].dtype)
        return ad.Zero(aval.to_tangent_aval())
    parts = [ad.instantiate_zeros(t) for t in tangents]
    src = parts[0] if runs else jnp.concatenate(parts, axis=-1)
    return jnp.take_along_axis(src, idx, axis=-1)


def _merge_jvp(primals, tangents, *, descending, payload, runs):
    a, b, a_valid, b_valid, *values = primals
    keys, idx = merge_p.bind(
        a, b, a_valid, b_valid, descending=descending, payload=int(Payload.INDEX), runs=runs
    )
    key_tangents = tangents[:1] if runs else tangents[:2]
    primal_out = [keys]
    tangent_out = [_gather_tangent(key_tangents, [a, b], idx, runs)]
    if payload == Payload.INDEX:
        primal_out.append(idx)
        tangent_out.append(ad.Zero(jax.typeof(idx).to_tangent_aval()))
    elif payload == Payload.VALUE:
        src = values[0] if runs else jnp.concatenate(values, axis=-1)
        primal_out.append(jnp.take_along_axis(src, idx, axis=-1))
        value_tangents = tangents[4:]
        tangent_out.append(_gather_tangent(value_tangents, values, idx, runs))
    return primal_out, tangent_out


ad.primitive_jvps[merge_p] = _merge_jvp


# ---------------------------------------------------------------- query primitives
# co_rank_p and is_sorted_p: one integer/bool output, no tangent, rows batched like merge_p.


def _query_primitive(name: str, target: str, abstract_eval) -> Primitive:
    prim = Primitive(name)
    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_eager_impl(prim))

    def lowering(ctx, *args, descending):
        return jax.ffi.ffi_lowering(target)(ctx, *args, descending=descending)

    mlir.register_lowering(prim, lowering, platform="cpu")
    mlir.register_lowering(prim, lowering, platform="cuda")

    def batching_rule(args, dims, *, descending):
        return prim.bind(*_batched_to_front(args, dims), descending=descending), 0

    batching.primitive_batchers[prim] = batching_rule

    def jvp(primals, tangents, *, descending):
        del tangents
        out = prim.bind(*primals, descending=descending)
        return out, ad.Zero(jax.typeof(out).to_tangent_aval())

    ad.primitive_jvps[prim] = jvp
    return prim


co_rank_p = _query_primitive(
    "jmp_co_rank",
    "jmp_co_rank",
    lambda k, a, b, *, descending: ShapedArray(k.shape, np.int32),
)
is_sorted_p = _query_primitive(
    "jmp_is_sorted",
    "jmp_is_sorted",
    lambda x, *, descending: ShapedArray(x.shape[:-1], np.bool_),
)
