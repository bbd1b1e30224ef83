"""The top-k family: `topk_family` returns case builders (data made when a case runs) for
jmp.top_k against what JAX users write today: lax.top_k, a descending sort then a slice (jnp's
and ours, values), jnp.argsort(descending, stable) then a take (values and indices), and
lax.approx_max_k as a reference (approximate: timed, not checked). Cases: one row of float32 at
k 10, 1000, 100000; the three rows shapes of docs/performance.md ("Top-k"); int32, bfloat16 and
float64 keys against float32's time a key; smallest first; on a GPU the old strategies forced
beside the issue's cases (the grid's tile filter, the scalar and vectorized blocks); and the cases
that set tuning/topk.h's thresholds: the grid's shortest row (kTopkGridMinLength: the vectorized
block against the stream strategy), the sort's share of the row (kTopkSortShare), XLA's short rows
(kTopkXlaMaxLength) and the registers' longest (kTopkRegsMaxLength: against the vectorized
block), each with our routes forced (kernel, sort, xla, kernel:<strategy>:
jax_mergepath._select_primitive.forced_route) beside the automatic one."""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
from jax import lax

import jax_mergepath as jmp
from jax_mergepath import _ffi
from jax_mergepath._select_primitive import STRATEGIES, forced_route
from perf.bench.case import Case
from perf.bench.checks import check_all
from perf.bench.data import dname, prng, random_keys, x64_ok
from perf.bench.timing import Variant

# (rows, row length, k): the rows cases of the issue (2^26 keys each on a GPU)
GPU_ROWS = ((16384, 4096, 32), (1024, 65536, 256), (131072, 512, 8))
CPU_ROWS = ((1024, 4096, 32), (64, 65536, 256), (8192, 512, 8))


def _values_only(ours, other) -> str | None:
    return check_all(ours[0], other)


def _approximate(ours, other) -> str | None:
    del ours, other  # (approx_max_k: timed as a reference, its result is not ours)
    return None


def _ours(k: int, largest: bool, route: str | None = None) -> Callable:
    def f(x):
        if route is None:
            return jmp.top_k(x, k, largest=largest)
        with forced_route(route):  # (the route is read when the call is traced)
            return jmp.top_k(x, k, largest=largest)

    return f


def topk_case(dtype, rows: int, n: int, k: int, largest: bool = True,
              routes: tuple[str, ...] = (), strategies: tuple[str, ...] = ()) -> Case:
    """A case of `rows` rows of n random keys (one row: 1-d) at k; with `routes` (the
    thresholds' cases) our forced routes beside the automatic one and lax.top_k alone as the
    baseline; with `strategies` the CUDA kernels' strategies forced beside the automatic one
    ("kernel:<name>": the old ones against the new) where they can run rows of n keys at k
    (tuning/topk.h topk_resolve_strategy), every baseline kept."""
    strategies = tuple(s for s in strategies
                       if _ffi._cpu.topk_resolve_strategy(int(STRATEGIES[s]), k, n) >= 0)
    shape = (n,) if rows == 1 else (rows, n)
    x = random_keys(prng(rows, n, k, 61), shape, dtype)
    item = np.dtype(dtype).itemsize
    size = f"2^{int(np.log2(n))}" if rows == 1 else f"{rows} x {n}"
    name = f"top_k {dname(dtype)} {size} k={k}" + ("" if largest else " smallest")
    ours = [Variant("jmp.top_k", _ours(k, largest), (x,))]
    ours += [Variant(f"jmp.top_k route={r}", _ours(k, largest, r), (x,))
             for r in (*routes, *(f"kernel:{s}" for s in strategies))]
    if largest:
        def lax_top_k(x):
            return lax.top_k(x, k)

        def sort_slice(x):
            return jnp.sort(x, axis=-1, descending=True)[..., :k]

        def jmp_sort_slice(x):
            return jmp.sort(x, descending=True)[..., :k]
    else:
        def lax_top_k(x):  # the smallest first: lax.top_k of the negated keys
            neg = -x if jnp.issubdtype(x.dtype, jnp.floating) else ~x
            idx = lax.top_k(neg, k)[1]
            return jnp.take_along_axis(x, idx, -1), idx

        def sort_slice(x):
            return jnp.sort(x, axis=-1)[..., :k]

        def jmp_sort_slice(x):
            return jmp.sort(x)[..., :k]

    def argsort_take(x):
        idx = jnp.argsort(x, axis=-1, descending=largest, stable=True)[..., :k]
        return jnp.take_along_axis(x, idx, -1), idx.astype(np.int32)

    baselines = [Variant("lax.top_k", lax_top_k, (x,))]
    if not routes:
        baselines += [
            Variant("jnp.sort then slice", sort_slice, (x,), check=_values_only),
            Variant("jmp.sort then slice", jmp_sort_slice, (x,), check=_values_only),
            Variant("jnp.argsort then take", argsort_take, (x,)),
        ]
    refs = []
    if largest and not routes and jnp.issubdtype(x.dtype, jnp.floating):
        refs.append(Variant("lax.approx_max_k", lambda x: lax.approx_max_k(x, k), (x,),
                            check=_approximate))
    nbytes = x.size * item + rows * k * (item + 4)
    return Case("topk", name, x.size, nbytes, ours, baselines, refs=refs)


# Default sizes (log2): one row's lengths, and the rows cases' keys in all.
GPU_LENGTHS, GPU_ROWS_LOG2 = (24, 27), 26
CPU_LENGTHS, CPU_ROWS_LOG2 = (22,), 22


def topk_sizes(platform: str, max_log2: int, quick: bool) -> dict:
    """{"topk": one row's log2 lengths, "topk_rows": log2 of the rows cases' keys}, capped at
    the run's largest size (--max-log2); --quick: 2^20 (or less) and the largest."""
    lengths = GPU_LENGTHS if platform == "gpu" else CPU_LENGTHS
    rows = GPU_ROWS_LOG2 if platform == "gpu" else CPU_ROWS_LOG2
    capped = sorted({min(lg, max_log2) for lg in lengths})
    if quick:
        capped = sorted({min(20, max_log2), capped[-1]})
    return {"topk": tuple(capped), "topk_rows": min(rows, max_log2)}


def topk_family(platform: str, sizes: dict, quick: bool) -> list[Callable[[], Case]]:
    """Case builders: the issue's cases at the run's sizes, then the thresholds' cases."""
    cases: list[Callable[[], Case]] = []
    sizes = {**sizes, **topk_sizes(platform, sizes["max"], quick)}
    lengths = sizes["topk"]
    top = lengths[-1]
    ks = (10, 1000) if quick else ((10, 100, 1000) if platform == "cpu" else (10, 1000, 100000))
    gpu = platform == "gpu" and not quick
    for log2 in lengths:
        for k in ks:
            if k <= 1 << log2:
                old = ("grid",) if gpu else ()  # (the stream strategy's: the tile filter)
                cases.append(lambda lg=log2, k=k, old=old: topk_case(
                    jnp.float32, 1, 1 << lg, k, strategies=old))
    row_shapes = GPU_ROWS if platform == "gpu" else CPU_ROWS
    cap = 1 << sizes["topk_rows"]
    for rows, n, k in row_shapes[2:] if quick else row_shapes:
        while rows * n > cap and rows > 1:
            rows //= 2
        if n <= cap:
            old = ("block", "block_vec") if gpu else ()  # (registers or the vectorized block)
            cases.append(lambda r=rows, n=n, k=k, old=old: topk_case(
                jnp.float32, r, n, k, strategies=old))
    if quick:
        return cases
    mid = min(top, 24)
    for dtype in (jnp.int32, jnp.bfloat16, jnp.float64):
        if x64_ok(dtype):
            cases.append(lambda d=dtype: topk_case(d, 1, 1 << mid, 1000))
            rows, n, k = row_shapes[0]
            cases.append(lambda d=dtype, r=rows, n=n, k=k: topk_case(d, r, n, k))
    cases.append(lambda: topk_case(jnp.float32, 1, 1 << mid, 1000, largest=False))
    # tuning/topk.h's thresholds, every route: kTopkGridMinLength (one row and 64 rows around
    # it; the block runs k 10 up to 2^18), kTopkSortShare (k a quarter and half of a row),
    # kTopkXlaMaxLength (short rows)
    routes = ("kernel", "sort", "xla")
    both = ("block_vec", "stream") if platform == "gpu" else ()
    for log2 in (15, 16, 17, 18, 19):
        if log2 <= top:
            cases.append(lambda lg=log2: topk_case(jnp.float32, 1, 1 << lg, 10, routes=routes,
                                                   strategies=both))
            cases.append(lambda lg=log2: topk_case(jnp.float32, 64, 1 << lg, 10,
                                                   routes=routes, strategies=both))
    n = 1 << min(top, 20)
    for k in (n // 4, n // 2):  # (n bound now: the lambdas below rebind it)
        cases.append(lambda k=k, n=n: topk_case(jnp.float32, 1, n, k, routes=routes))
    block = ("block_vec",) if platform == "gpu" else ()
    for rows, n in ((1, 1024), (1, 4096), (4096, 64), (4096, 256), (2048, 8192)):
        cases.append(lambda r=rows, n=n: topk_case(jnp.float32, r, n, 8, routes=routes,
                                                   strategies=block))
    return cases
