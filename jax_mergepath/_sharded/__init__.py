"""The sharded layer: merges, sorts and queries along an axis split over devices
(docs/contract.md "Sharding", docs/architecture.md "Sharded axis").

Contract: the public functions describe each call as an Op (ops.py: its kind, static arguments
and single-device program) on arrays with the sorted / merged / searched axis LAST, and hand it
to `call` (entry.py), which runs it over the devices where that axis is split (inside a user's
shard_map with axis_name; explicit mesh axes or a concrete array's NamedSharding; auto mesh axes
under jax.jit, partitioned by XLA: auto.py) and as the single-device program otherwise. The
modules by job: layout (mesh axes, typing helpers), splitters and exchange (the sort's
communication), sort, merge and queries (the per-device algorithms), ops / plan / local (calls as
data, their layout over a mesh, their per-device programs), derivatives, entry and auto.
"""

from jax_mergepath._sharded.entry import call
from jax_mergepath._sharded.layout import AxisName, check_axis_name
from jax_mergepath._sharded.ops import Op

__all__ = ["AxisName", "Op", "call", "check_axis_name"]
