"""JAX primitives of jax_mergepath: abstract evaluation, lowering to the FFI targets, batching
and JVP rules.

Contract: operands are already validated and moved so the merged axis is LAST; every leading
dimension is a batch row. Batching rules only move the vmapped dimension to the front (leading
dimensions are rows to the kernel), so any vmap, nested or not, is ONE kernel call.

merge_p(a, b, a_valid, b_valid, *values, descending, payload, runs, full_rows)
    -> [out, payload_out?]
  a (*B, m), b (*B, n), a_valid / b_valid int32 (*B); payload NONE / INDEX / VALUE (values:
  va (*B, m), vb (*B, n)). runs=True: a == b == x (*B, d), a_valid == b_valid == split; the
  kernel reads only a. out is (*B, m + n) (runs: (*B, d)). full_rows=True (not runs): every
  row is whole (m and n valid), known at trace time, so the kernels read no lengths and may take
  their full-row paths (the CUDA rows kernel); a_valid / b_valid are then empty, (*B, 0), so
  nothing is materialized for them (a vmap would broadcast one a row).
merge_ragged_p(x, starts, lengths, *values, descending, out_length) -> [out, values_out?]
  x (*B, span) holds G <= 8 sorted, disjoint runs a row, run r at x[..., starts[r]:][:lengths[r]]
  (starts, lengths int32 (*B, G), clamped into the row); out (*B, out_length) their stable merge
  (ties: the earlier run first), a row's lengths summing to out_length (past a shorter sum:
  unspecified). values: one array shaped like x of 4- or 8-byte elements, moved with the keys.
co_rank_p(k, a, b, descending) -> i: k int32 (*B, q), a (*B, m), b (*B, n); i int32 (*B, q).
is_sorted_p(x, descending) -> ok: x (*B, d); ok bool (*B).
sort_p(keys, *values, descending, payload, keys_needed=True) -> [keys, payload_out?]: keys
  (*B, d); payload NONE, INDEX (int32 positions: argsort) or VALUE (values (*B, d), moved with
  the keys); keys_needed=False: the sorted keys are dropped by the caller (the CUDA radix path
  then leaves them unwritten: unspecified). The lowering resolves the call's method once
  (_ffi.resolve_sort_method: the attribute `method`) and adds the workspace as results: spare
  keys, spare payload (both empty for the CUDA method RADIX_DIRECT, whose spares are in its
  workspace), one uint8 a row (and the CUDA partition splits).
searchsorted_p(a, v, right, sorted_v) -> i: a (*B, n) sorted, v (*B, q); i int32 (*B, q).
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from jax_mergepath import _ffi
from jax_mergepath._bits import concatenate_bits, take_along_bits
from jax_mergepath._lowering import batch_dims_of, ffi_call


class Payload(enum.IntEnum):  # key_types.h's PayloadKind
    NONE = 0
    INDEX = 1
    VALUE = 2
    RANKS_OF_A = 3
    RANKS_OF_B = 4


# ---------------------------------------------------------------- merge_p

merge_p = Primitive("jmp_merge")
merge_p.multiple_results = True


def _weak(aval) -> bool:
    """Outputs keep the weak types of the operands they permute (as jnp.sort / lax.sort)."""
    return bool(getattr(aval, "weak_type", False))


def _vma(aval) -> frozenset:
    """The manual mesh axes along which aval varies (jax 0.10: aval.mat.varying; later
    versions: aval.vma)."""
    mat = getattr(aval, "mat", None)
    return frozenset(mat.varying if mat is not None else getattr(aval, "vma", frozenset()))


def _typed(like, operands, shape, dtype, weak_type: bool = False, drop_last: bool = False):
    """An output aval of shape and dtype typed as `like`, an operand: its sharding (its mesh
    and spec, the last entry dropped when `drop_last`) and the manual axes it varies along,
    which must be every operand's (as lax.sort_p's outputs, which are its operands' avals).
    Outputs typed so keep explicit-axis shardings (jit, vmap and grad over sharded rows) and
    shard_map's varying types."""
    varying = frozenset().union(*(_vma(a) for a in operands))
    base = next((a for a in [like, *operands] if _vma(a) >= varying), like)
    kwargs = {}
    sharding = getattr(base, "sharding", None)
    if sharding is not None and getattr(sharding, "spec", None) is not None:
        spec = tuple(sharding.spec) + (None,) * (base.ndim - len(sharding.spec))
        if drop_last:
            spec = spec[:-1]
        kwargs["sharding"] = sharding.update(spec=spec)
    return base.update(shape=tuple(shape), dtype=np.dtype(dtype), weak_type=weak_type, **kwargs)


def _merge_out_length(a_shape: Sequence[int], b_shape: Sequence[int], runs: bool) -> int:
    return a_shape[-1] if runs else a_shape[-1] + b_shape[-1]


def _merge_abstract_eval(a, b, a_valid, b_valid, *values, descending, payload, runs, full_rows):
    del descending, full_rows
    shape = (*a.shape[:-1], _merge_out_length(a.shape, b.shape, runs))
    operands = [a, b, a_valid, b_valid, *values]
    outs = [_typed(a, operands, shape, a.dtype, weak_type=_weak(a) and (runs or _weak(b)))]
    if payload == Payload.INDEX:
        outs.append(_typed(a, operands, shape, np.int32))
    elif payload == Payload.VALUE:
        weak = all(_weak(v) for v in values)
        outs.append(_typed(a, operands, shape, values[0].dtype, weak_type=weak))
    return outs


merge_p.def_abstract_eval(_merge_abstract_eval)


def _eager_impl(primitive: Primitive):
    """Eager evaluation = the jitted primitive (one compiled executable per parameter set)."""

    @functools.cache
    def jitted(params: tuple, sort_method: int):
        del sort_method  # (a key: the sort lowering reads _ffi.sort_method())
        return jax.jit(functools.partial(primitive.bind, **dict(params)))

    def impl(*args, **params):
        with jax.disable_jit(False):  # under jax.disable_jit() the jit would call impl again
            return jitted(tuple(sorted(params.items())), _ffi.sort_method())(*args)

    return impl


merge_p.def_impl(_eager_impl(merge_p))


def _merge_cpu_lowering(ctx, *args, descending, payload, runs, full_rows):
    return ffi_call(
        ctx, "jmp_merge", *args, num_batch_dims=batch_dims_of(ctx.avals_in[0]),
        descending=descending, payload=np.int64(payload), runs=runs, full_rows=full_rows,
    )


def _value_bytes(payload: int, values_aval) -> int:
    return values_aval.dtype.itemsize if payload == Payload.VALUE else 0


def _merge_splits(
    batch: tuple, key_bytes: int, payload: int, value_bytes: int, length: _ffi.DimSize
) -> ShapedArray:
    """The CUDA merge's int32 partition workspace (*batch, per_row) for rows of `length`
    outputs (concrete or symbolic)."""
    per_row = _ffi.merge_workspace_per_row(key_bytes, payload, value_bytes, length)
    return ShapedArray((*batch, per_row), np.int32)


def _merge_cuda_lowering(ctx, *args, descending, payload, runs, full_rows):
    _ffi.require_cuda_target("jmp_merge", "merge_runs" if runs else "merge")
    a_aval, b_aval = ctx.avals_in[0], ctx.avals_in[1]
    length = a_aval.shape[-1] if runs else a_aval.shape[-1] + b_aval.shape[-1]
    splits = _merge_splits(
        a_aval.shape[:-1], a_aval.dtype.itemsize, payload,
        _value_bytes(payload, ctx.avals_in[-1]), length,
    )
    return ffi_call(
        ctx, "jmp_merge", *args, workspace=(splits,), num_batch_dims=batch_dims_of(a_aval),
        descending=descending, payload=np.int64(payload), runs=runs, full_rows=full_rows,
    )


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
        aval = jax.typeof(idx).update(dtype=np.dtype(primals[0].dtype), weak_type=False)
        return ad.Zero(aval.to_tangent_aval())
    parts = [ad.instantiate_zeros(t) for t in tangents]
    src = parts[0] if runs else jnp.concatenate(parts, axis=-1)
    return jnp.take_along_axis(src, idx, axis=-1)


def _merge_jvp(primals, tangents, *, descending, payload, runs, full_rows):
    a, b, a_valid, b_valid, *values = primals
    keys, idx = merge_p.bind(
        a, b, a_valid, b_valid, descending=descending, payload=int(Payload.INDEX), runs=runs,
        full_rows=full_rows,
    )
    key_tangents = tangents[:1] if runs else tangents[:2]
    primal_out = [keys]
    tangent_out = [_gather_tangent(key_tangents, [a, b], idx, runs)]
    if payload == Payload.INDEX:
        primal_out.append(idx)
        tangent_out.append(ad.Zero(jax.typeof(idx).to_tangent_aval()))
    elif payload == Payload.VALUE:
        src = values[0] if runs else concatenate_bits(tuple(values), -1)
        primal_out.append(take_along_bits(src, idx, -1))
        value_tangents = tangents[4:]
        tangent_out.append(_gather_tangent(value_tangents, values, idx, runs))
    return primal_out, tangent_out


ad.primitive_jvps[merge_p] = _merge_jvp


# ---------------------------------------------------------------- merge_ragged_p

merge_ragged_p = Primitive("jmp_merge_ragged")
merge_ragged_p.multiple_results = True


def _merge_ragged_abstract_eval(x, starts, lengths, *values, descending, out_length):
    del descending
    runs = starts.shape[-1] if starts.ndim else 0
    if (starts.shape != lengths.shape or starts.shape[:-1] != x.shape[:-1] or not 1 <= runs <= 8
            or {np.dtype(starts.dtype), np.dtype(lengths.dtype)} != {np.dtype(np.int32)}
            or len(values) > 1 or any(v.shape != x.shape for v in values)):
        raise ValueError(
            f"jmp_merge_ragged: x {x.shape}, starts and lengths int32 (*batch, 1..8) with x's "
            f"batch, values shaped as x; got starts {starts.shape} {starts.dtype}, lengths "
            f"{lengths.shape} {lengths.dtype}, values {[v.shape for v in values]}")
    shape = (*x.shape[:-1], out_length)
    operands = [x, starts, lengths, *values]
    outs = [_typed(x, operands, shape, x.dtype, weak_type=_weak(x))]
    if values:
        outs.append(_typed(x, operands, shape, values[0].dtype, weak_type=_weak(values[0])))
    return outs


merge_ragged_p.def_abstract_eval(_merge_ragged_abstract_eval)
merge_ragged_p.def_impl(_eager_impl(merge_ragged_p))


def _merge_ragged_lowering(ctx, *args, descending, out_length, cuda: bool):
    x = ctx.avals_in[0]
    workspace = ()
    if cuda:
        _ffi.require_cuda_target("jmp_merge_ragged", "merge_ragged")
        value_bytes = ctx.avals_in[3].dtype.itemsize if len(ctx.avals_in) > 3 else 0
        per_row = _ffi.ragged_merge_workspace_per_row(x.dtype.itemsize, value_bytes, out_length)
        workspace = (ShapedArray((*x.shape[:-1], per_row), np.int32),)
    return ffi_call(ctx, "jmp_merge_ragged", *args, workspace=workspace,
                    num_batch_dims=batch_dims_of(x), descending=descending)


mlir.register_lowering(merge_ragged_p, functools.partial(_merge_ragged_lowering, cuda=False),
                       platform="cpu")
mlir.register_lowering(merge_ragged_p, functools.partial(_merge_ragged_lowering, cuda=True),
                       platform="cuda")


def _merge_ragged_batching_rule(args, dims, **params):
    outs = merge_ragged_p.bind(*_batched_to_front(args, dims), **params)
    return outs, [0] * len(outs)


batching.primitive_batchers[merge_ragged_p] = _merge_ragged_batching_rule


def _merge_ragged_jvp(primals, tangents, *, descending, out_length):
    """The outputs' tangents: the inputs' gathered by the merge's positions (int32, moved as
    values)."""
    x, starts, lengths, *values = primals
    pos = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    keys, idx = merge_ragged_p.bind(x, starts, lengths, pos, descending=descending,
                                    out_length=out_length)
    primal_out = [keys, *(take_along_bits(v, idx, -1) for v in values)]
    tangent_out = [_gather_tangent([t], [p], idx, runs=True)
                   for p, t in zip([x, *values], [tangents[0], *tangents[3:]], strict=True)]
    return primal_out, tangent_out


ad.primitive_jvps[merge_ragged_p] = _merge_ragged_jvp


# ---------------------------------------------------------------- query primitives
# co_rank_p and is_sorted_p: one integer/bool output, no tangent, rows batched like merge_p.


def _query_primitive(name: str, target: str, abstract_eval) -> Primitive:
    prim = Primitive(name)
    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_eager_impl(prim))

    def lowering(ctx, *args, descending):
        # operands (*B, q) / (*B, m) / (*B, d): the last input's leading dims are the rows
        return ffi_call(ctx, target, *args, num_batch_dims=batch_dims_of(ctx.avals_in[-1]),
                        descending=descending)

    def cuda_lowering(ctx, *args, descending):
        _ffi.require_cuda_target(target, name.removeprefix("jmp_"))
        return lowering(ctx, *args, descending=descending)

    mlir.register_lowering(prim, lowering, platform="cpu")
    mlir.register_lowering(prim, cuda_lowering, platform="cuda")

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
    lambda k, a, b, *, descending: _typed(k, [k, a, b], k.shape, np.int32),
)
is_sorted_p = _query_primitive(
    "jmp_is_sorted",
    "jmp_is_sorted",
    lambda x, *, descending: _typed(x, [x], x.shape[:-1], np.bool_, drop_last=True),
)


# ---------------------------------------------------------------- sort_p

sort_p = Primitive("jmp_sort")
sort_p.multiple_results = True


def _sort_abstract_eval(keys, *values, descending, payload, keys_needed=True):
    del descending, keys_needed
    operands = [keys, *values]
    outs = [_typed(keys, operands, keys.shape, keys.dtype, weak_type=_weak(keys))]
    if payload == Payload.INDEX:
        outs.append(_typed(keys, operands, keys.shape, np.int32))
    elif payload == Payload.VALUE:
        outs.append(_typed(keys, operands, keys.shape, values[0].dtype,
                           weak_type=_weak(values[0])))
    return outs


sort_p.def_abstract_eval(_sort_abstract_eval)
sort_p.def_impl(_eager_impl(sort_p))


def _sort_workspace(ctx, payload: int, spares_empty: bool = False) -> list:
    """Spare keys and payload (the passes' ping-pong halves; empty for the method RADIX_DIRECT,
    whose spares are in the partition workspace) and one flag byte a row."""
    keys = ctx.avals_in[0]
    shape = (*keys.shape[:-1], 0) if spares_empty else keys.shape
    spare = [ShapedArray(shape, keys.dtype)]
    if payload != Payload.NONE:
        spare.append(ShapedArray(shape, ctx.avals_out[1].dtype))
    return [*spare, ShapedArray((*keys.shape[:-1], 1), np.uint8)]


def _sort_method(ctx, platform: str, descending: bool, payload: int):
    """The call's method, resolved once (_ffi.resolve_sort_method), and its sizes: (method, rows,
    (key bytes, payload, value bytes, length))."""
    keys = ctx.avals_in[0]
    batch = keys.shape[:-1]
    rows = math.prod(batch) if all(isinstance(d, int) for d in batch) else None
    shape = (keys.dtype.itemsize, payload, _value_bytes(payload, ctx.avals_in[-1]), keys.shape[-1])
    method = _ffi.resolve_sort_method(
        platform, *shape, rows=rows, integer_keys=keys.dtype.kind in "biu", descending=descending
    )
    return method, rows, shape


def _sort_cpu_lowering(ctx, *args, descending, payload, keys_needed=True):
    method, _, _ = _sort_method(ctx, "cpu", descending, payload)
    return ffi_call(
        ctx, "jmp_sort", *args, workspace=tuple(_sort_workspace(ctx, payload)),
        num_batch_dims=batch_dims_of(ctx.avals_in[0]), descending=descending,
        payload=np.int64(payload), method=np.int64(method), keys_needed=keys_needed,
    )


def _sort_cuda_lowering(ctx, *args, descending, payload, keys_needed=True):
    _ffi.require_cuda_target("jmp_sort", "sort")
    keys = ctx.avals_in[0]
    method, rows, shape = _sort_method(ctx, "cuda", descending, payload)
    per_row = _ffi.sort_workspace_per_row(*shape, method=method, rows=rows)
    splits = ShapedArray((*keys.shape[:-1], per_row), np.int32)
    spares_empty = method == _ffi.SortMethod.RADIX_DIRECT
    workspace = (*_sort_workspace(ctx, payload, spares_empty=spares_empty), splits)
    return ffi_call(
        ctx, "jmp_sort", *args, workspace=workspace, num_batch_dims=batch_dims_of(keys),
        descending=descending, payload=np.int64(payload), method=np.int64(method),
        keys_needed=keys_needed,
    )


mlir.register_lowering(sort_p, _sort_cpu_lowering, platform="cpu")
mlir.register_lowering(sort_p, _sort_cuda_lowering, platform="cuda")


def _sort_batching_rule(args, dims, **params):
    outs = sort_p.bind(*_batched_to_front(args, dims), **params)
    return outs, [0] * len(outs)


batching.primitive_batchers[sort_p] = _sort_batching_rule


def _sort_jvp(primals, tangents, *, descending, payload, keys_needed=True):
    del keys_needed  # (the tangent of the keys needs them)
    keys, *values = primals
    sorted_keys, idx = sort_p.bind(keys, descending=descending, payload=int(Payload.INDEX))
    primal_out = [sorted_keys]
    tangent_out = [_gather_tangent(tangents[:1], [keys], idx, runs=True)]
    if payload == Payload.INDEX:
        primal_out.append(idx)
        tangent_out.append(ad.Zero(jax.typeof(idx).to_tangent_aval()))
    elif payload == Payload.VALUE:
        primal_out.append(take_along_bits(values[0], idx, -1))
        tangent_out.append(_gather_tangent(tangents[1:], values, idx, runs=True))
    return primal_out, tangent_out


ad.primitive_jvps[sort_p] = _sort_jvp


# ---------------------------------------------------------------- searchsorted_p

searchsorted_p = Primitive("jmp_searchsorted")
searchsorted_p.def_abstract_eval(
    lambda a, v, *, right, sorted_v: _typed(v, [a, v], v.shape, np.int32))
searchsorted_p.def_impl(_eager_impl(searchsorted_p))


def _searchsorted_cpu_lowering(ctx, a, v, *, right, sorted_v):
    return ffi_call(ctx, "jmp_searchsorted", a, v, num_batch_dims=batch_dims_of(ctx.avals_in[0]),
                    right=right, sorted_v=sorted_v)


def _searchsorted_cuda_lowering(ctx, a, v, *, right, sorted_v):
    _ffi.require_cuda_target("jmp_searchsorted", "searchsorted")
    a_aval, v_aval = ctx.avals_in
    # Sorted queries run as a merge of (v, a) ("left") or (a, v) ("right") with int32 ranks.
    ranks = Payload.RANKS_OF_B if right else Payload.RANKS_OF_A
    batch = a_aval.shape[:-1]
    workspace = (
        _merge_splits(batch, a_aval.dtype.itemsize, ranks, 0, a_aval.shape[-1] + v_aval.shape[-1])
        if sorted_v
        else ShapedArray((*batch, 1), np.int32),
    )
    return ffi_call(ctx, "jmp_searchsorted", a, v, workspace=workspace,
                    num_batch_dims=batch_dims_of(a_aval), right=right, sorted_v=sorted_v)


mlir.register_lowering(searchsorted_p, _searchsorted_cpu_lowering, platform="cpu")
mlir.register_lowering(searchsorted_p, _searchsorted_cuda_lowering, platform="cuda")


def _searchsorted_batching_rule(args, dims, *, right, sorted_v):
    (a, v), (da, dv) = args, dims
    if da is None:
        # One sorted array for every batch member: the vmapped queries are more queries of the
        # same rows (never a broadcast copy of a).
        rows = a.ndim - 1
        vm = jnp.moveaxis(v, dv, rows)
        shape = vm.shape
        flat = vm.reshape(*shape[:rows], math.prod(shape[rows:]))
        # (the batch members' queries are not sorted as one sequence, unless there is one)
        out = searchsorted_p.bind(a, flat, right=right, sorted_v=sorted_v and shape[rows] == 1)
        return out.reshape(shape), rows
    a, v = _batched_to_front(args, dims)
    return searchsorted_p.bind(a, v, right=right, sorted_v=sorted_v), 0


batching.primitive_batchers[searchsorted_p] = _searchsorted_batching_rule


def _searchsorted_jvp(primals, tangents, *, right, sorted_v):
    del tangents
    out = searchsorted_p.bind(*primals, right=right, sorted_v=sorted_v)
    return out, ad.Zero(jax.typeof(out).to_tangent_aval())


ad.primitive_jvps[searchsorted_p] = _searchsorted_jvp
