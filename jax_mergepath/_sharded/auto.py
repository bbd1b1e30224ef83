"""Calls on auto mesh axes under jax.jit: a primitive whose lowering lets XLA's SPMD partitioner
pick the single-device or the sharded program once it knows the operands' shardings.

Contract: `applies(arrays)` says when a call takes this way: traced (under jax.jit, or any
transformation of one), several devices, not inside a shard_map, and no explicit mesh axis in
the operands' types or the context mesh (those are read at trace time: entry.py). `call(op,
arrays)` binds `sharded_p`, whose
- abstract value is the single-device program's (ops.plain), so traced code sees nothing new;
- lowering is that program where the module has one device (and for jax.export: an exported
  auto-axis call is the single-device program, which XLA partitions as before, gathering a split
  axis; export explicit axes or a shard_map for a distributed program), else a
  jax.experimental.custom_partitioning call of it: Shardy's sharding rule (or GSPMD's
  callbacks) keeps every element axis and row dimension as it comes, and once XLA knows the
  shardings the partition callback lays the operands out (plan.py) and returns the per-device
  program: the sharded one (local.run_local) where an element axis is split, else the
  single-device program on each device's rows;
- batching rule: the call again with one more vmap level (Op.vmapped: both programs vmapped);
- JVP rule: for the permutations, the primal call with the outputs' sources, and the tangents as
  jax.custom_derivatives.linear_call of the "move" call (its transpose the "back" call), both
  auto calls themselves; the queries have integer outputs.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax.custom_derivatives import linear_call
from jax.experimental.custom_partitioning import custom_partitioning
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jax_mergepath._sharded import linear_batching  # noqa: F401 - vmap of linear_call
from jax_mergepath._sharded.layout import Axes, explicit_axes, typed_sharding
from jax_mergepath._sharded.local import run_local
from jax_mergepath._sharded.ops import SELECTIONS, Op, feeds, gather_tangent, layout, plain
from jax_mergepath._sharded.plan import leading, make_plan, nout

sharded_p = Primitive("jmp_sharded")
sharded_p.multiple_results = True
try:  # its lowering may bind custom_partitioning, which needs the devices at lowering time
    from jax._src import dispatch

    dispatch.prim_requires_devices_during_lowering.add(sharded_p)
except (ImportError, AttributeError):  # pragma: no cover - a jax without the registry
    pass


def _explicit(mesh) -> bool:
    """Every axis of the mesh explicit: shardings over it are all in the types."""
    return len(explicit_axes(mesh)) == len(mesh.axis_names) > 0


def applies(arrays: list[jax.Array]) -> bool:
    """Whether a call on arrays takes the auto-axis way (module docstring)."""
    if jax.device_count() <= 1 or not any(isinstance(x, jax.core.Tracer) for x in arrays):
        return False
    if any(x.size == 0 for x in arrays):
        return False
    context = jax.sharding.get_abstract_mesh()
    if context.manual_axes or (not context.empty and _explicit(context)):
        return False
    return not any(typed_sharding(x) is not None and _explicit(typed_sharding(x).mesh)
                   for x in arrays)


def call(op: Op, arrays: list[jax.Array]) -> list[jax.Array]:
    return list(sharded_p.bind(*arrays, op=op))


def _vmapped(fn, op: Op):
    """fn(op without vmap levels, arrays) vmapped over op's levels: a function of the arrays."""
    base = op.replace(vmapped=())

    def f(*arrays):
        return list(fn(base, list(arrays)))

    for level in reversed(op.vmapped):  # innermost first; the outermost wraps last
        f = jax.vmap(f, in_axes=[0 if batched else None for batched in level])
    return f


# ---------------------------------------------------------------- abstract value, eager


@functools.lru_cache(maxsize=1024)
def _out_avals(op: Op, signature: tuple) -> tuple:
    structs = [jax.ShapeDtypeStruct(shape, dtype, weak_type=weak)
               for shape, dtype, weak in signature]
    outs = jax.eval_shape(_vmapped(plain, op), *structs)
    return tuple(jax.core.ShapedArray(o.shape, o.dtype, weak_type=o.weak_type) for o in outs)


def _abstract_eval(*avals, op: Op):
    return list(_out_avals(op, tuple((a.shape, a.dtype, a.weak_type) for a in avals)))


sharded_p.def_abstract_eval(_abstract_eval)
sharded_p.def_impl(lambda *args, op: _vmapped(plain, op)(*args))


# ---------------------------------------------------------------- lowering


def _devices(ctx) -> int:
    context = ctx.module_context.axis_context
    if hasattr(context, "num_devices"):
        return context.num_devices
    mesh = getattr(context, "mesh", None)
    return mesh.size if mesh is not None else 1


def _lowering(ctx, *args, op: Op):
    exporting = getattr(ctx.module_context.lowering_parameters, "for_export", False)
    if _devices(ctx) <= 1 or exporting:
        fn = _vmapped(plain, op)
    else:
        fn = _partitioned(op)
    return mlir.lower_fun(lambda *a: list(fn(*a)), multiple_results=True)(ctx, *args)


mlir.register_lowering(sharded_p, _lowering)


@functools.lru_cache(maxsize=256)
def _partitioned(op: Op):
    """The custom_partitioning call of op's single-device program (module docstring)."""
    single = _vmapped(plain, op)

    @custom_partitioning
    def f(*arrays):
        return single(*arrays)

    f.def_partition(
        partition=functools.partial(_partition, op),
        infer_sharding_from_operands=functools.partial(_infer, op),
        propagate_user_sharding=_propagate,
        sharding_rule=functools.partial(_rule, op),
    )
    return f


def _specs(arg_shapes) -> list[P] | None:
    """Every operand's full spec (one not sharded yet: replicated); None where a sharding is
    not a NamedSharding (no mesh to name its axes)."""
    specs = []
    for s in arg_shapes:
        sharding = getattr(s, "sharding", None)
        if sharding is None:
            specs.append(P(*([None] * len(s.shape))))
            continue
        if not isinstance(sharding, NamedSharding):
            return None
        spec = tuple(sharding.spec)
        specs.append(P(*spec, *([None] * (len(s.shape) - len(spec)))))
    return specs


def _plan(op: Op, mesh, arg_shapes, strict: bool):
    specs = _specs(arg_shapes)
    if specs is None or mesh.empty:
        return None
    shapes = [tuple(s.shape) for s in arg_shapes]
    return make_plan(op, mesh, specs, shapes, nout(op, len(shapes)), strict)


def _shardy() -> bool:
    """Shardy partitions the program: a callback's error reaches the user as a
    JaxRuntimeError (GSPMD aborts the process on one: no callback raises there)."""
    return bool(jax.config.jax_use_shardy_partitioner)


def _partition(op: Op, mesh, arg_shapes, result_shape):
    plan = _plan(op, mesh, arg_shapes, strict=_shardy())
    if plan is None:  # shardings without a mesh: everything replicated, the plain program
        devices = arg_shapes[0].sharding._device_assignment
        whole = jax.sharding.GSPMDSharding.get_replicated(devices)
        return (mesh, _vmapped(plain, op), [whole] * len(result_shape),
                tuple(whole for _ in arg_shapes))
    if plan.entry is None:
        lower_fn = _vmapped(plain, op)
    else:
        axes = Axes(plan.entry, tuple(mesh.axis_names))
        split = plan.queries_split
        lower_fn = _vmapped(lambda o, arrays: run_local(o, axes, arrays, split), op)
    outs = [NamedSharding(mesh, s) for s in plan.out_specs]
    return mesh, lower_fn, outs, tuple(NamedSharding(mesh, s) for s in plan.in_specs)


def _infer(op: Op, mesh, arg_shapes, result_shape):
    """GSPMD's result shardings: the plan's."""
    plan = _plan(op, mesh, arg_shapes, strict=False)
    if plan is None:  # (no mesh: replicated)
        devices = next(s.sharding for s in arg_shapes if s.sharding is not None)
        whole = jax.sharding.GSPMDSharding.get_replicated(devices._device_assignment)
        return [whole for _ in result_shape]
    return [NamedSharding(mesh, s) for s in plan.out_specs]


def _propagate(mesh, user_shape):
    del mesh
    return jax.tree.map(lambda s: s.sharding, user_shape)


def _shape(t) -> tuple[int, ...]:
    return tuple(mlir.ir.RankedTensorType(t).shape)


def _rule(op: Op, mesh, value_types, result_types):
    """Shardy's rule for the call: a factor a dimension, shared where dimensions go together
    (rows, a split element axis with its outputs; a merge's inputs and output through the
    compound factors of gcd(m, n))."""
    del mesh
    shapes_in = [_shape(t) for t in value_types]
    shapes_out = [_shape(t) for t in result_types]
    base = op.replace(vmapped=())
    lead = leading(op)
    ndims = [len(s) - (sum(lead[i]) if lead else 0) for i, s in enumerate(shapes_in)]
    dims_in, dims_out = layout(base, ndims, len(shapes_out))
    sizes: dict[str, int] = {}
    present = {d.elem for d in [*dims_in, *dims_out]}
    elems = _merge_factors(dims_in, shapes_in, lead, sizes, present)

    def one(i: int | None, d, shape, levels: list[int], where: str) -> str:
        rows = len(shape) - len(levels) - (d.elem is not None) - d.trailing
        names = [f"v{k}" for k in levels] + [f"r{j}" for j in range(rows)]
        if d.elem is not None:
            names.append(elems.get(d.elem, f"e{d.elem}"))
        names += [f"t{where}{i}_{j}" for j in range(d.trailing)]
        return " ".join(names) if names else ""

    ins = []
    for i, (d, shape) in enumerate(zip(dims_in, shapes_in, strict=True)):
        levels = [k for k, b in enumerate(lead[i]) if b] if lead else []
        ins.append(one(i, d, shape, levels, "i"))
    levels = list(range(len(op.vmapped)))
    outs = [one(j, d, shape, levels, "o") for j, (d, shape) in
            enumerate(zip(dims_out, shapes_out, strict=True))]
    return ", ".join(ins) + " -> " + ", ".join(outs), sizes


def _merge_factors(dims_in, shapes_in, lead, sizes: dict[str, int],
                   present: set) -> dict[str, str]:
    """A merge's element factors: a's m = h p, b's n = h q and the output's m + n = h (p + q)
    with h = gcd(m, n), so a split of h (the devices divide m and n) splits all three alike."""
    lengths = {}
    for i, (d, shape) in enumerate(zip(dims_in, shapes_in, strict=True)):
        if d.elem in ("a", "b") and d.elem not in lengths:
            levels = sum(lead[i]) if lead else 0
            rows = len(shape) - levels - 1 - d.trailing
            lengths[d.elem] = shape[levels + rows]
    if "a" not in lengths or "b" not in lengths:
        return {}
    m, n = lengths["a"], lengths["b"]
    h = math.gcd(m, n)
    if h <= 1:
        return {"a": "ea", "b": "eb", "o": "eo"}
    out = {}
    for name, length in (("a", m), ("b", n), ("o", m + n)):
        if name not in present:
            continue
        k = length // h
        if k == 1:
            out[name] = "mh"
        else:
            out[name] = f"(mh m{name})"
            sizes[f"m{name}"] = k
    if all(v.startswith("(") for v in out.values()):
        sizes["mh"] = h
    return out


# ---------------------------------------------------------------- transformations


def _batching(args, dims, *, op: Op):
    moved = [x if d is None else jnp.moveaxis(x, d, 0) for x, d in zip(args, dims, strict=True)]
    level = tuple(d is not None for d in dims)
    outs = sharded_p.bind(*moved, op=op.replace(vmapped=(level, *op.vmapped)))
    return outs, [0] * len(outs)


batching.primitive_batchers[sharded_p] = _batching


def _zero(x) -> ad.Zero:
    return ad.Zero(jax.typeof(x).to_tangent_aval())


def _selection_jvp(primals, tangents, op: Op):
    """top_k's: each selected output's tangent is its input's tangent at the indices (a gather,
    linear: grad transposes it into a scatter); none for the indices."""
    outs = sharded_p.bind(*primals, op=op)
    idx = outs[1]
    out_tans = [_zero(o) for o in outs]
    for j, i in ((0, 0), *((2 + m, 1 + m) for m in range(len(primals) - 1))):
        t = tangents[i]
        if type(t) is ad.Zero or not jnp.issubdtype(primals[i].dtype, jnp.inexact):
            continue
        # (the indices carry every vmap level, the tangent its primal's)
        at = op.replace(vmapped=tuple((True, level[i]) for level in op.vmapped))
        out_tans[j] = _vmapped(lambda _, a: [gather_tangent([a[1]], a[0])], at)(idx, t)[0]
    return outs, out_tans


def _jvp(primals, tangents, *, op: Op):
    base = op.replace(vmapped=())
    if base.kind in SELECTIONS:
        return _selection_jvp(primals, tangents, op)
    if base.kind in ("move", "back"):  # linear in the tangents or cotangents they move
        n = base.arity + 1
        linear = [ad.instantiate_zeros(t) for t in tangents[n:]]
        outs = sharded_p.bind(*primals, op=op)
        return outs, sharded_p.bind(*primals[:n], *linear, op=op)
    fed = feeds(base, len(primals))

    def given(i: int) -> bool:
        return type(tangents[i]) is not ad.Zero

    diff = tuple(j for j, ins in enumerate(fed)
                 if jnp.issubdtype(primals[ins[0]].dtype, jnp.inexact) and any(map(given, ins)))
    if not diff:
        outs = sharded_p.bind(*primals, op=op)
        return outs, [_zero(o) for o in outs]
    *outs, source = sharded_p.bind(*primals, op=op.replace(positions=True))
    # (linear_call's transpose needs every linear operand undefined: inputs without a tangent are
    # left out, zeros inside the move call)
    present = tuple(given(i) for j in diff for i in fed[j])
    ins = [tangents[i] for j in diff for i in fed[j] if given(i)]
    move = Op("move", base.name, base=base.replace(positions=False), arity=len(primals),
              diff=diff, present=present, vmapped=op.vmapped)
    back = move.replace(kind="back")
    got = linear_call(lambda res, ts: sharded_p.bind(*res[0], res[1], *ts, op=move),
                      lambda res, cts: sharded_p.bind(*res[0], res[1], *cts, op=back),
                      (list(primals), source), ins)
    out_tans = [_zero(o) for o in outs]
    for j, t in zip(diff, got, strict=True):
        out_tans[j] = t
    if op.positions:
        return [*outs, source], [*out_tans, _zero(source)]
    return outs, out_tans


ad.primitive_jvps[sharded_p] = _jvp

