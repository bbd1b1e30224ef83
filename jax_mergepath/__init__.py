"""jax_mergepath: merge and mergesort for JAX on the GPU and CPU, through the XLA FFI.

The public names: the merge family (merge, merge_by_key, merge_runs, co_rank, is_sorted), the
sort family (sort, argsort, sort_by_key, lax_sort, sort_key_val, searchsorted), the selection
family (top_k, top_k_by_key, partition, argpartition),
check_sorted_inputs (the opt-in check that sorted inputs are sorted), and
export_disabled_checks for jax.export. Each function's docstring gives its arguments, results
and errors; docs/contract.md gives the ordering contract, docs/performance.md the measurements.
"""

from jax_mergepath._checked import check_sorted_inputs
from jax_mergepath._ffi import HAS_CUDA, export_disabled_checks
from jax_mergepath._merge import co_rank, is_sorted, merge, merge_by_key, merge_runs
from jax_mergepath._select import argpartition, partition, top_k, top_k_by_key
from jax_mergepath._sort import argsort, lax_sort, searchsorted, sort, sort_by_key, sort_key_val

__all__ = [
    "HAS_CUDA",
    "argpartition",
    "argsort",
    "check_sorted_inputs",
    "co_rank",
    "export_disabled_checks",
    "is_sorted",
    "lax_sort",
    "merge",
    "merge_by_key",
    "merge_runs",
    "partition",
    "searchsorted",
    "sort",
    "sort_by_key",
    "sort_key_val",
    "top_k",
    "top_k_by_key",
]
__version__ = "0.2.0"
