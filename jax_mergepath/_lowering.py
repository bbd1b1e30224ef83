"""How every primitive lowers to its FFI target (one place): internal workspace results shaped
per batch row, and the batch-partitioning attributes that let XLA's SPMD partitioner run the
call on batch-sharded operands device by device, with no collectives.

Contract: operands and results of a call share their leading `num_batch_dims` dimensions (the
batch rows; the kernels treat rows independently), so a shard of rows is a valid call on its
own; workspace results are (*batch, per_row), per_row enough for a row whatever the number of
rows (_ffi.py), so each shard gets its rows' part. Targets are registered as batch
partitionable in _ffi.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
from jax.interpreters import mlir

try:  # jax's own rule builder for batch-partitionable custom calls under Shardy
    from jax._src.custom_partitioning_sharding_rule import (
        sdy_sharding_rule_to_mlir,
        str_to_sdy_sharding_rule,
    )
except ImportError:  # pragma: no cover - a jax without it: no Shardy rule, GSPMD still works
    sdy_sharding_rule_to_mlir = str_to_sdy_sharding_rule = None


def is_static(shape: Sequence) -> bool:
    """No symbolic dimension (jax.export shape polymorphism) in shape."""
    return not any(jax.export.is_symbolic_dim(d) for d in shape)


def _shardy_rule(ctx, num_batch_dims: int, avals_in, avals_out):
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

    def one(aval) -> str:  # "... a b": the batch dims, then one factor a dimension
        return " ".join(["...", *(next(letters) for _ in range(aval.ndim - num_batch_dims))])

    rule = str_to_sdy_sharding_rule(
        ", ".join(one(a) for a in avals_in) + " -> " + ", ".join(one(a) for a in avals_out)
    )
    types_in = [_ir_type(ctx, a) for a in avals_in]
    types_out = [_ir_type(ctx, a) for a in avals_out]
    return sdy_sharding_rule_to_mlir(rule, types_in, types_out)


def _ir_type(ctx, aval):
    try:  # jax 0.10+: (module context, aval)
        return mlir.aval_to_ir_type(ctx.module_context, aval)
    except TypeError:  # pragma: no cover - older signature: (aval)
        return mlir.aval_to_ir_type(aval)


def _partitioning_attributes(ctx, num_batch_dims: int) -> dict | None:
    avals = [*ctx.avals_in, *ctx.avals_out]
    if num_batch_dims <= 0 or any(a.ndim < num_batch_dims for a in avals):
        return None
    if not all(is_static(a.shape) for a in avals):
        return None  # symbolic shapes: no partitioning
    attrs = {
        "mhlo.frontend_attributes": mlir.ir_attribute({"num_batch_dims": str(num_batch_dims)})
    }
    if jax.config.jax_use_shardy_partitioner and str_to_sdy_sharding_rule is not None:
        attrs["sdy.sharding_rule"] = _shardy_rule(
            ctx, num_batch_dims, ctx.avals_in, ctx.avals_out
        )
    return attrs


def ffi_call(ctx, target: str, *args, workspace: tuple = (), num_batch_dims: int = 0, **attrs):
    """The FFI call of `target` with `workspace` results appended (sized by the caller, never
    allocated by a handler) and batch partitioning over the leading num_batch_dims; returns
    only the primitive's own results."""
    ctx = ctx.replace(avals_out=[*ctx.avals_out, *workspace])
    extra = _partitioning_attributes(ctx, num_batch_dims)
    rule = (
        jax.ffi.ffi_lowering(target, extra_attributes=extra)
        if extra
        else jax.ffi.ffi_lowering(target)
    )
    results = rule(ctx, *args, **attrs)
    return results[: len(results) - len(workspace)] if workspace else results


def batch_dims_of(aval) -> int:
    """Leading batch dimensions of an operand whose last axis is merged, sorted or searched."""
    return max(aval.ndim - 1, 0)

