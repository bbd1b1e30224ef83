"""The sharded layer's entry from the public functions: which way a call runs.

Contract: `call(op, arrays, axis_name)` returns op's outputs (ops.py: the split axis LAST) and
picks the way: inside a user's shard_map with `axis_name`, the per-device program on the local
shards (each device's own queries); on arrays whose type (explicit mesh axes) or concrete
NamedSharding splits an element axis, a cached jax.jit(shard_map(...)) of it over that mesh
(plan.py lays the operands out, a no-op where they are); under jax.jit on several devices with
nothing in the types (auto mesh axes), the auto-axis primitive (auto.py), which XLA partitions
once the shardings are known; otherwise the single-device program (rows split over devices run
per device through the kernels' batch partitioning). Derivatives: local.with_derivatives.
"""

from __future__ import annotations

import functools

import jax
from jax.sharding import PartitionSpec as P

from jax_mergepath._sharded import auto
from jax_mergepath._sharded.layout import (
    Axes,
    AxisName,
    bound_axes,
    check_axis_name,
    full_spec,
    placed,
    typed_sharding,
)
from jax_mergepath._sharded.local import with_derivatives
from jax_mergepath._sharded.ops import Op, plain
from jax_mergepath._sharded.plan import Plan, make_plan, nout


def _sharding_of(x: jax.Array):
    """x's NamedSharding: a concrete array's own (its mesh holds devices, so the other operands
    can be put on it eagerly), else from its type (explicit axes); else None."""
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        sharding = x.sharding
        if isinstance(sharding, jax.sharding.NamedSharding) and len(sharding.device_set) > 1:
            return sharding
    return typed_sharding(x)


def _known_split(arrays: list[jax.Array]):
    """(mesh, every operand's full spec) where some operand's sharding is known now (explicit
    axes, or a concrete array); else None."""
    shardings = [_sharding_of(x) for x in arrays]
    known = [s.mesh for s in shardings if s is not None]
    if not known:
        return None
    abstract = known[0].abstract_mesh  # the first known operand's mesh
    # (as a mesh of devices where an operand has one: eager operands are put on it)
    mesh = next((m for m in known
                 if isinstance(m, jax.sharding.Mesh) and m.abstract_mesh == abstract), known[0])
    specs = [full_spec(s.spec if s is not None and s.mesh.abstract_mesh == abstract else P(),
                       x.ndim)
             for s, x in zip(shardings, arrays, strict=True)]
    return mesh, specs


def call(op: Op, arrays: list[jax.Array], axis_name: AxisName | None) -> list[jax.Array]:
    """op's outputs, over the devices where an element axis is split (module docstring)."""
    if axis_name is not None:
        check_axis_name(axis_name, op.name)
        return with_derivatives(op, bound_axes(axis_name), arrays, queries_split=True)
    known = _known_split(arrays)
    if known is not None:
        mesh, specs = known
        shapes = [tuple(x.shape) for x in arrays]
        plan = make_plan(op, mesh, specs, shapes, nout(op, len(arrays)))
        if plan.entry is None:
            return plain(op, arrays)
        moved = [placed(x, mesh, s) for x, s in zip(arrays, plan.in_specs, strict=True)]
        return list(_mapped(op, mesh, plan)(*moved))
    if auto.applies(arrays):
        return auto.call(op, arrays)
    return plain(op, arrays)


@functools.lru_cache(maxsize=256)
def _mapped(op: Op, mesh, plan: Plan):
    """The jitted shard_map of op over mesh: one compile per layout and call (eager calls reuse
    it)."""
    axes = Axes(plan.entry, tuple(mesh.axis_names))

    def local(*shards):
        return with_derivatives(op, axes, list(shards), plan.queries_split)

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=plan.in_specs,
                                 out_specs=list(plan.out_specs)))
