"""Where a sharded call runs: the mesh axes its axis is split over (Axes), the typing helpers of
per-device code (varying, float0_zeros, mesh_max), global positions, rows (on_rows), and reading
an array's split from its sharding.

Contract: per-device functions take local shards with the split axis LAST (every leading
dimension a row; values may have trailing dimensions after it) and an Axes: `name`, the mesh
axis or axes the split axis runs over (the shards are in axis_index order along them, in any
order of the mesh's axes), and `mesh_axes`, every mesh axis manual where the code runs, in the
mesh's order, and every name of `name` (a loop whose body holds a ppermute runs as many trips
on every device of the mesh). Collectives along the split axis that pair devices go through
Axes.permute. They run inside a shard_map (a user's, or the explicit-axis entry's) or as the
per-device program of a custom_partitioning call (auto.py), where collectives over the mesh's
axis names work but nothing is typed varying.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jax_mergepath._dtypes import index_dtype

AxisName = str | tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Axes:
    """The mesh axes of a split axis (name) and every manual mesh axis (mesh_axes: the manual
    ones in the mesh's order, then any other name of the split axis)."""

    name: AxisName
    mesh_axes: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return names_of(self.name)

    def size(self) -> int:
        """The number of devices along the split axis."""
        return lax.psum(1, self.name)

    def index(self) -> jax.Array:
        """This device's index along the split axis."""
        return lax.axis_index(self.name)

    def permute(self, x, pairs: Sequence[tuple[int, int]]):
        """lax.ppermute of x (an array or a list of arrays) along the split axis: (source,
        destination) pairs of indices along it (axis_index's). ppermute numbers a tuple of mesh
        axes in the mesh's order whatever the tuple's (jax 0.10-0.11 sort each group's devices;
        axis_index, all_gather and all_to_all follow the tuple), so the pairs are renumbered over
        the names in mesh order, which both numberings agree on."""
        names = self.names
        in_mesh = tuple(n for n in self.mesh_axes if n in names)
        assert len(in_mesh) == len(names), (names, self.mesh_axes)
        if in_mesh == names:
            return lax.ppermute(x, self.name, list(pairs))
        sizes = {n: lax.psum(1, n) for n in names}

        def renumber(index: int) -> int:
            coords = {}
            for n in reversed(names):
                index, coords[n] = divmod(index, sizes[n])
            out = 0
            for n in in_mesh:
                out = out * sizes[n] + coords[n]
            return out

        return lax.ppermute(x, in_mesh, [(renumber(a), renumber(b)) for a, b in pairs])


def names_of(axis_name: AxisName) -> tuple[str, ...]:
    return (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)


def bound_axes(axis_name: AxisName) -> Axes:
    """Axes inside a shard_map: axis_name and the manual axes of the context's mesh."""
    mesh = jax.sharding.get_abstract_mesh()
    manual = tuple(n for n in mesh.axis_names if n in mesh.manual_axes)  # the mesh's order
    return Axes(axis_name, tuple(dict.fromkeys((*manual, *names_of(axis_name)))))


def _manual() -> frozenset:
    return frozenset(jax.sharding.get_abstract_mesh().manual_axes)


def typed(names: Sequence[str]) -> bool:
    """Whether values are typed by their varying mesh axes `names` here (inside a shard_map;
    not in a custom_partitioning call's per-device program, whose axes are not manual in the
    context mesh)."""
    return bool(names) and set(names) <= _manual()


def invariant(x: jax.Array, names: Sequence[str]) -> bool:
    """Whether x is typed the same on every device along the mesh axes `names` (inside a
    shard_map, varying along none of them); False where nothing is typed, and in a shard_map
    with check_vma=False, where no value carries its varying axes (axis_index's tells)."""
    names = tuple(names)
    return (typed(names) and bool(_vma(lax.axis_index(names)))
            and not (_vma(x) & set(names)))


def varying(x: jax.Array, names: Sequence[str]) -> jax.Array:
    """x typed as varying over the mesh axes `names` where shard_map types values (loop carries
    and custom derivatives must agree); unchanged where nothing is typed (a custom_partitioning
    call's per-device program) or where it already varies."""
    names = tuple(n for n in names if n in _manual())
    if not names:
        return x
    vma = _vma(x)
    missing = tuple(name for name in names if name not in vma)
    return lax.pcast(x, missing, to="varying") if missing else x


def _vma(x: jax.Array) -> frozenset:
    aval = jax.typeof(x)
    mat = getattr(aval, "mat", None)  # (jax 0.10: aval.mat.varying; others: aval.vma)
    return frozenset(mat.varying if mat is not None else getattr(aval, "vma", frozenset()))


def varying_as(x: jax.Array, *likes: jax.Array) -> jax.Array:
    """x typed as varying over every manual axis along which any of `likes` varies (a loop
    carry that the loop fills with them)."""
    names = frozenset().union(*(_vma(like) for like in likes))
    return varying(x, sorted(names))


def float0_zeros(x: jax.Array) -> jax.Array:
    """The zero tangent or cotangent of an integer x (float0), typed varying as x (custom_jvp
    and custom_vjp check the types inside shard_map)."""
    return varying_as(np.zeros(x.shape, jax.dtypes.float0), x)


@jax.custom_batching.custom_vmap
def rows_max(x: jax.Array) -> jax.Array:
    """x (a loop's trip count, >= 0) as it is; under vmap (on_rows' rows, a user's vmap, nested
    ones) its maximum over every vmapped axis (0 for no rows), unbatched: the loop then runs alike
    for every row (a row that needs fewer rounds runs empty ones), and checkify, which refuses a
    while loop whose predicate is batched, can check it."""
    return x


@rows_max.def_vmap
def _rows_max_vmap(axis_size: int, in_batched: list[bool], x: jax.Array):
    del axis_size  # (rows_max again: an enclosing vmap reduces its own axis too)
    return rows_max(jnp.max(x, axis=0, initial=0) if in_batched[0] else x), False


def mesh_max(x: jax.Array, axes: Axes, over=None) -> jax.Array:
    """x's maximum over the rows (rows_max) and every manual mesh axis (or the axes `over`): the
    trip count of a loop whose body holds a ppermute must agree on every device of the mesh,
    not only along the split axis (XLA's collective permute of one mesh axis is one operation
    over all the mesh's devices; a 2-D mesh's rows would otherwise wait on each other). x is
    typed varying over them first (jax 0.11 refuses a pmax over an axis along which its input is
    invariant)."""
    over = axes.mesh_axes if over is None else over
    return lax.pmax(varying(rows_max(x), over), over)


def global_positions(n: int, axes: Axes) -> jax.Array:
    """The global positions of this device's shard of n elements along the split axis."""
    g = axes.size()
    dtype = index_dtype(g * n)
    return axes.index().astype(dtype) * n + lax.iota(dtype, n)


def positions_like(keys: jax.Array, axes: Axes) -> jax.Array:
    """The global positions along the last axis of this device's shard, in keys' shape."""
    n = keys.shape[-1]
    return jnp.broadcast_to(global_positions(n, axes), keys.shape)


def on_rows(fn: Callable, arrays: Sequence[jax.Array], row_ndim: int) -> list[jax.Array]:
    """fn on 1-d rows: the first row_ndim dimensions of every array are rows (the keys' batch
    dimensions, mapped by vmap); the split axis follows them, then any trailing dimensions of
    values, which move with the elements."""
    f = fn
    for _ in range(row_ndim):
        f = jax.vmap(f)
    return list(f(list(arrays)))


# ---------------------------------------------------------------- reading the split


def mesh_axes_size(mesh, entry: AxisName) -> int:
    return math.prod(mesh.shape[name] for name in names_of(entry))


def full_spec(spec, ndim: int) -> jax.sharding.PartitionSpec:
    """spec padded with None to ndim entries."""
    spec = tuple(spec) if spec is not None else ()
    return jax.sharding.PartitionSpec(*spec, *([None] * (ndim - len(spec))))


def explicit_axes(mesh) -> tuple[str, ...]:
    """The mesh's explicit axes (whose shardings are part of the types)."""
    types = getattr(mesh, "axis_types", ())
    return tuple(name for name, t in zip(mesh.axis_names, types, strict=True)
                 if t == jax.sharding.AxisType.Explicit)


def typed_sharding(x: jax.Array):
    """x's NamedSharding when its type carries a mesh with explicit axes, else None."""
    sharding = getattr(jax.typeof(x), "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or getattr(mesh, "empty", True) or not explicit_axes(mesh):
        return None
    return sharding


def split_sharding(x: jax.Array, ax: int):
    """(mesh, spec) when x's axis `ax` is split over mesh axes: read from x's type (explicit
    mesh axes, under jit or not) or, for a concrete array, from its NamedSharding; else None."""
    candidates = [typed_sharding(x)]
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        candidates.append(x.sharding)
    for sharding in candidates:
        spec = getattr(sharding, "spec", None)  # (NamedSharding only)
        if spec is not None and len(spec) > ax % x.ndim and spec[ax % x.ndim] is not None:
            return sharding.mesh, full_spec(spec, x.ndim)
    return None


def check_divisible(length: int, mesh, entry: AxisName, what: str, op: str) -> None:
    """The number of devices along mesh axes `entry` must divide `length` (jax places only
    even shards)."""
    g = mesh_axes_size(mesh, entry)
    if length % g:
        raise ValueError(
            f"jax_mergepath.{op}: {what} ({length} elements) is split over mesh axes "
            f"{entry!r} of {g} devices; its length must be a multiple of {g}"
        )


def check_axis_name(axis_name: AxisName, op: str) -> int:
    """The number of devices along axis_name, which must be bound (inside shard_map)."""
    names = (axis_name,) if isinstance(axis_name, str) else axis_name
    if not isinstance(names, tuple) or not names or not all(isinstance(a, str) for a in names):
        raise TypeError(
            f"jax_mergepath.{op}: axis_name must be a mesh axis name or a tuple of them, got "
            f"{axis_name!r}"
        )
    try:
        return lax.psum(1, axis_name)
    except NameError as e:
        raise ValueError(
            f"jax_mergepath.{op}: axis_name={axis_name!r} is not bound here: call it inside "
            f"jax.shard_map over a mesh with that axis, on the local shards"
        ) from e


def placed(x: jax.Array, mesh, spec) -> jax.Array:
    """x laid out as `spec` over mesh (a no-op when it is)."""
    current = typed_sharding(x)
    if current is not None and full_spec(current.spec, x.ndim) == full_spec(spec, x.ndim):
        return x
    if isinstance(x, jax.core.Tracer):
        return jax.sharding.reshard(x, jax.sharding.NamedSharding(mesh, spec))
    return jax.device_put(x, jax.sharding.NamedSharding(mesh, spec))
