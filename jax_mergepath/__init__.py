"""jax_mergepath: merge and mergesort for JAX on the GPU and CPU, through the XLA FFI.

The public names of SPEC.md that exist so far (the merge family); see README.md.
"""

from jax_mergepath._api import co_rank, is_sorted, merge, merge_by_key, merge_runs
from jax_mergepath._ffi import HAS_CUDA

__all__ = ["HAS_CUDA", "co_rank", "is_sorted", "merge", "merge_by_key", "merge_runs"]
__version__ = "0.1.0"
