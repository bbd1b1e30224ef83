"""How a call's arrays are laid out over a mesh: from the specs its operands arrive with, the
split of the element axis (read from its inputs), the rows' and queries' specs, and every
operand's and output's PartitionSpec (shared by the explicit-axis entry and the auto-axis
partitioner).

Contract: `make_plan(op, mesh, specs, shapes, nout)` takes every operand's full PartitionSpec
(None entries where replicated) and shape (the split axis LAST, ops.layout) and returns a Plan:
`entry`, the mesh axes the element axis is split over (read from the first operand whose element
axis is a split one, ops.SPLIT_FACTORS, and split; None: not split, the call runs per device on
rows), the in / out specs that every operand and output is laid out as, and whether queries are
split along the same axes (queries.py). A mesh axis shards one dimension of an array: the element
axis keeps its axes, rows and queries take only others. An element axis that the devices along
`entry` do not divide raises the ValueError that names it.
"""

from __future__ import annotations

import dataclasses
import functools

from jax.sharding import PartitionSpec as P

from jax_mergepath._sharded.layout import check_divisible, names_of
from jax_mergepath._sharded.ops import FOLLOWERS, SELECTIONS, SPLIT_FACTORS, Dims, Op, layout


@dataclasses.dataclass(frozen=True)
class Plan:
    entry: str | tuple[str, ...] | None
    in_specs: tuple[P, ...]
    out_specs: tuple[P, ...]
    queries_split: bool


def leading(op: Op) -> list[list[bool]]:
    """For each operand, which vmap levels (outermost first) it carries as leading dims."""
    return [list(flags) for flags in zip(*op.vmapped, strict=True)] if op.vmapped else []


def _split(dims: list[Dims], lead: list[list[bool]], ndims: list[int]):
    """Each array's (vmap level dims, row count): its dims before the element axis."""
    out = []
    for i, (d, nd) in enumerate(zip(dims, ndims, strict=True)):
        levels = [k for k, batched in enumerate(lead[i]) if batched] if lead else []
        rows = nd - len(levels) - (d.elem is not None) - d.trailing
        out.append((levels, rows))
    return out


def _axes(entry) -> tuple[str, ...]:
    return () if entry is None else names_of(entry)


def make_plan(op: Op, mesh, specs: list[P], shapes: list[tuple[int, ...]], nout: int,
              strict: bool = True) -> Plan:
    """The Plan of op's call (module docstring); an element axis the devices do not divide
    raises, or with strict=False is not split (gathered: XLA's partitioner under GSPMD aborts
    the process on a callback's error)."""
    ndims = [len(s) for s in shapes]
    dims_in, dims_out = layout(op.replace(vmapped=()), _base_ndims(op, ndims), nout)
    lead = leading(op)
    parts = _split(dims_in, lead, ndims)
    entry, source = None, None
    for i, d in enumerate(dims_in):
        levels, rows = parts[i]
        if d.elem in SPLIT_FACTORS and specs[i][len(levels) + rows] is not None:
            entry, source = specs[i][len(levels) + rows], i
            break
    if entry is not None and not _divisible(op, mesh, entry, dims_in, parts, shapes, strict):
        entry, source = None, None
    used = set(_axes(entry))

    def free(spec_entry):
        names = _axes(spec_entry)
        if not names or used & set(names):
            return None
        used.update(names)
        return spec_entry

    src = 0 if source is None else source
    levels, rows = parts[src]
    row_specs = [free(specs[src][len(levels) + r]) for r in range(rows)]
    level_specs = {}
    for k in range(len(op.vmapped)):
        holder = next((i for i in range(len(specs)) if lead[i][k]), None)
        at = parts[holder][0].index(k) if holder is not None else None
        level_specs[k] = free(specs[holder][at]) if holder is not None else None
    query = None
    queries_split = False
    for i, d in enumerate(dims_in):
        if d.elem == "q":
            levels, rows = parts[i]
            q = specs[i][len(levels) + rows]
            if q is not None and entry is not None and set(_axes(q)) == set(_axes(entry)):
                query, queries_split = entry, True
            else:
                query = free(q)
            break

    def spec(d: Dims, levels: list[int]) -> P:
        elem = {"q": query, "k": None}.get(d.elem, entry) if d.elem else None
        out = [level_specs[k] for k in levels] + row_specs
        out += ([elem] if d.elem is not None else []) + [None] * d.trailing
        return P(*out)

    in_specs = tuple(spec(d, parts[i][0]) for i, d in enumerate(dims_in))
    all_levels = list(range(len(op.vmapped)))
    out_specs = tuple(spec(d, all_levels) for d in dims_out)
    return Plan(entry, in_specs, out_specs, queries_split)


def _divisible(op: Op, mesh, entry, dims_in: list[Dims], parts, shapes, strict: bool) -> bool:
    """Whether the devices along `entry` divide every element axis split with it (else the
    ValueError that names it, when strict)."""
    for i, d in enumerate(dims_in):
        if d.elem in SPLIT_FACTORS | FOLLOWERS:
            levels, rows = parts[i]
            what = ("the selected axis" if op.kind in SELECTIONS else "the sorted axis") \
                if d.elem == "n" else f"operand {i}'s merged axis"
            try:
                check_divisible(shapes[i][len(levels) + rows], mesh, entry, what, op.name)
            except ValueError:
                if strict:
                    raise
                return False
    return True


def _base_ndims(op: Op, ndims: list[int]) -> list[int]:
    """The operands' ranks without their vmap levels."""
    lead = leading(op)
    if not lead:
        return ndims
    return [nd - sum(flags) for nd, flags in zip(ndims, lead, strict=True)]


@functools.lru_cache(maxsize=1024)
def nout(op: Op, narrays: int) -> int:
    """How many outputs op has for narrays operands."""
    kind = op.kind
    if kind == "move":
        return len(op.diff)
    if kind == "back":
        return len(op.ins())
    if kind in ("sort", "sort_by_key", "lax_sort"):
        return narrays + op.positions
    if kind == "merge_by_key":
        return 1 + (narrays - 2) // 2 + op.positions
    if kind in ("merge", "merge_runs"):
        return 1 + op.positions
    if kind == "top_k":
        return narrays + 1
    return 1
