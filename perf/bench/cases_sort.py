"""The sort family: `sort_family` returns case builders (data is made when a case runs, and freed
after it) for jmp.sort / argsort (random and presorted), sort_by_key, lax_sort, row sorts and
searchsorted, against the JAX idioms (jnp.sort, jnp.argsort(stable), lax.sort, jnp.searchsorted
methods), with torch (same device) and numpy (CPU) references and the matching CUB case names."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jax_mergepath as jmp
from perf.bench.case import Case
from perf.bench.checks import same_values
from perf.bench.config import ROW_WIDTHS, Cfg
from perf.bench.data import dname, jnp_argsort_stable, prng, random_keys, x64_ok
from perf.bench.timing import Variant


def _torch_ref(cfg: Cfg, label: str, fn: Callable, *arrays: jax.Array, check=None) -> list:
    """A torch reference on the same device (the JAX arrays shared through DLPack)."""
    if cfg.torch is None:
        return []
    try:
        targs = tuple(cfg.torch.from_dlpack(a) for a in arrays)
    except Exception as err:  # noqa: BLE001 - a reference only
        return [Variant(label, fn, (), kind="torch", error=f"no DLPack: {err}")]
    return [Variant(label, fn, targs, kind="torch", check=check)]


def _numpy_ref(cfg: Cfg, label: str, fn: Callable, *arrays: jax.Array, check=None) -> list:
    if cfg.platform != "cpu":
        return []
    return [Variant(label, fn, tuple(np.asarray(a) for a in arrays), kind="numpy", check=check)]


def _nan_pre_check(dtype, argsort: bool) -> Callable:
    """Sort values on small data with NaNs, -0.0 and +0.0 against jnp.sort (values, NaN-equal);
    argsort indices against jnp.argsort on NaN-free data with ties (exact)."""

    def pre_check() -> str | None:
        n = 1 << 16
        x = np.array(jax.random.normal(prng(n, 7), (n,), dtype))
        x[::97] = np.nan
        x[5::89] = 0.0
        x[7::83] = -0.0
        if not same_values(jmp.sort(x), jnp.sort(x)):
            return "sort with NaN / signed zeros differs from jnp.sort"
        if argsort:
            y = np.round(np.array(jax.random.normal(prng(n, 8), (n,), dtype)) * 8)
            if not same_values(jmp.argsort(y), jnp_argsort_stable(y)):
                return "argsort with ties differs from jnp.argsort(stable=True)"
        return None

    return pre_check


def sort_case(dtype, log2: int, argsort: bool, cfg: Cfg, presorted: bool = False) -> Case:
    n = 1 << log2
    item = np.dtype(dtype).itemsize
    x = random_keys(prng(n, np.dtype(dtype).num, argsort), n, dtype)
    if presorted:
        x = jnp.sort(x)
    dn = dname(dtype)
    floating = np.issubdtype(np.dtype(dtype), np.floating)
    pre = _nan_pre_check(dtype, argsort) if floating else None
    torch = cfg.torch
    if argsort:
        return Case(
            "sort", f"argsort {dn} 2^{log2}", n, n * item + n * 4,
            [Variant("jmp.argsort", jmp.argsort, (x,))],
            [Variant("jnp.argsort(stable)", jnp_argsort_stable, (x,))],
            refs=_torch_ref(cfg, "torch.argsort(stable)",
                            lambda t: torch.argsort(t, stable=True), x)
            + _numpy_ref(cfg, "np.argsort(stable)", lambda a: np.argsort(a, kind="stable"), x),
            cub=[f"radix_pairs_{dn}", f"mergesort_pairs_{dn}"],
            pre_check=pre,
        )
    name = f"sort {dn} 2^{log2}" + (" presorted" if presorted else "")
    return Case(
        "sort", name, n, 2 * n * item,
        [Variant("jmp.sort", jmp.sort, (x,))],
        [Variant("jnp.sort", jnp.sort, (x,))],
        refs=_torch_ref(cfg, "torch.sort(stable)",
                        lambda t: torch.sort(t, stable=True).values, x)
        + _numpy_ref(cfg, "np.sort(stable)", lambda a: np.sort(a, kind="stable"), x),
        cub=[] if presorted else [f"radix_keys_{dn}", f"mergesort_keys_{dn}"],
        pre_check=pre,
    )


def sort_by_key_case(log2: int) -> Case:
    n = 1 << log2
    k = random_keys(prng(n, 11), n, jnp.float32)
    pos = random_keys(prng(n, 12), (n, 3), jnp.float32)
    ids = random_keys(prng(n, 13), n, jnp.int32)

    def ours(k, pos, ids):
        return jmp.sort_by_key(k, (pos, ids))

    def lax_all(k, pos, ids):
        ks, p0, p1, p2, i = lax.sort((k, pos[:, 0], pos[:, 1], pos[:, 2], ids), num_keys=1,
                                     is_stable=True)
        return ks, (jnp.stack([p0, p1, p2], axis=1), i)

    def argsort_gather(k, pos, ids):
        idx = jnp_argsort_stable(k)
        return k[idx], (pos[idx], ids[idx])

    args = (k, pos, ids)
    return Case(
        "sort", f"sort_by_key f32 + (f32[n,3], i32) 2^{log2}", n, 2 * n * (4 + 12 + 4),
        [Variant("jmp.sort_by_key", ours, args)],
        [Variant("lax.sort(5 operands, stable)", lax_all, args),
         Variant("argsort(stable)+gathers", argsort_gather, args)],
    )


def _lax_sort_case(log2: int, title: str, num_keys: int, ops: tuple) -> Case:
    """jmp.lax_sort vs lax.sort (stable: lax.sort's default too)."""
    n = 1 << log2
    return Case(
        "sort", f"lax_sort {title} 2^{log2}", n, 2 * n * sum(o.dtype.itemsize for o in ops),
        [Variant("jmp.lax_sort", lambda *o: jmp.lax_sort(o, num_keys=num_keys), ops)],
        [Variant("lax.sort(stable)",
                 lambda *o: lax.sort(o, num_keys=num_keys, is_stable=True), ops)],
    )


def lax_sort_cases(log2: int) -> list[Callable[[], Case]]:
    n = 1 << log2

    def three_operands() -> Case:
        ops = (random_keys(prng(n, 21), n, jnp.float32), random_keys(prng(n, 22), n, jnp.int32),
               random_keys(prng(n, 23), n, jnp.float32))
        return _lax_sort_case(log2, "f32 key + i32, f32", 1, ops)

    def two_keys() -> Case:
        ops = (jax.random.randint(prng(n, 31), (n,), 0, max(n // 16, 2), jnp.int32),
               random_keys(prng(n, 32), n, jnp.float32), random_keys(prng(n, 33), n, jnp.int32))
        return _lax_sort_case(log2, "num_keys=2 i32,f32 + i32", 2, ops)

    def two_integer_keys() -> Case:  # packed into one 32-bit key, unpacked after the sort
        ops = (jax.random.randint(prng(n, 34), (n,), 0, 1 << 16, jnp.int32).astype(jnp.uint16),
               jax.random.randint(prng(n, 35), (n,), 0, 1 << 16, jnp.int32).astype(jnp.uint16),
               random_keys(prng(n, 36), n, jnp.int32))
        return _lax_sort_case(log2, "num_keys=2 u16,u16 + i32", 2, ops)

    return [three_operands, two_keys, two_integer_keys]


def rows_case(log2: int, width: int, cfg: Cfg) -> Case:
    n = 1 << log2
    x = random_keys(prng(n, width, 41), n, jnp.int32).reshape(-1, width)
    torch = cfg.torch
    return Case(
        "sort", f"rows int32 2^{log2} as (-1, {width})", n, 2 * n * 4,
        [Variant("jmp.sort", jmp.sort, (x,))],
        [Variant("jnp.sort(axis=-1)", lambda v: jnp.sort(v, axis=-1), (x,))],
        refs=_torch_ref(cfg, "torch.sort(dim=-1, stable)",
                        lambda t: torch.sort(t, dim=-1, stable=True).values, x)
        + _numpy_ref(cfg, "np.sort(axis=-1, stable)",
                     lambda a: np.sort(a, axis=-1, kind="stable"), x),
        cub=[f"segsort_keys_int32_seg{width}"],
    )


def searchsorted_case(log2: int, cfg: Cfg, quick: bool) -> Case:
    n = 1 << log2
    a = jnp.sort(random_keys(prng(n, 51), n, jnp.int32))
    v = jnp.sort(random_keys(prng(n, 52), n, jnp.int32))
    args = (a, v)
    baselines = []
    methods = ["scan", "sort"]
    notes = []
    if cfg.platform == "gpu" and not quick:
        methods.insert(1, "scan_unrolled")
    if n * n <= 1 << 26:
        methods.append("compare_all")
    else:
        notes.append("jnp.searchsorted(method='compare_all') skipped: n * m too large")
    if cfg.platform != "gpu" or quick:
        notes.append("jnp.searchsorted(method='scan_unrolled') skipped (GPU only, not --quick)")
    for meth in methods:
        baselines.append(Variant(
            f"jnp.searchsorted({meth})",
            lambda a, v, m=meth: jnp.searchsorted(a, v, method=m), args,
            compile_timeout=cfg.search_compile_timeout if meth == "scan_unrolled" else None,
        ))
    torch = cfg.torch
    return Case(
        "sort", f"searchsorted int32 2^{log2} in 2^{log2}", n, 4 * n + 4 * n + 4 * n,
        [Variant("sorted_v=True", lambda a, v: jmp.searchsorted(a, v, sorted_v=True), args),
         Variant("sorted_v=False", lambda a, v: jmp.searchsorted(a, v), args)],
        baselines,
        refs=_torch_ref(cfg, "torch.searchsorted",
                        lambda a, v: torch.searchsorted(a, v, out_int32=True), a, v)
        + _numpy_ref(cfg, "np.searchsorted", np.searchsorted, a, v),
        notes=notes,
    )


# Batched sorted-query searches of short rows (examples/species_energy.py's shape): rows of
# SEARCH_ROW keys of a with SEARCH_ROW_QUERIES sorted queries each.
SEARCH_ROW, SEARCH_ROW_QUERIES = 1024, 64


def searchsorted_rows_case(log2: int) -> Case:
    n = 1 << log2
    width = min(SEARCH_ROW, n)
    rows, q = n // width, SEARCH_ROW_QUERIES
    a = jnp.sort(random_keys(prng(n, 55), (rows, width), jnp.int32), axis=-1)
    v = jnp.sort(random_keys(prng(n, 56), (rows, q), jnp.int32), axis=-1)
    args = (a, v)
    baselines = [
        Variant(f"vmap(jnp.searchsorted({meth}))",
                lambda a, v, m=meth: jax.vmap(lambda r, s: jnp.searchsorted(r, s, method=m))(a, v),
                args)
        for meth in ("scan", "sort", "compare_all")
    ]
    return Case(
        "sort", f"searchsorted int32 rows 2^{log2} as {rows} x ({width} + {q})", n,
        4 * n + 2 * 4 * rows * q,
        [Variant("sorted_v=True", lambda a, v: jmp.searchsorted(a, v, sorted_v=True), args),
         Variant("sorted_v=False", lambda a, v: jmp.searchsorted(a, v), args)],
        baselines,
    )


def sort_family(cfg: Cfg, sizes: dict, quick: bool) -> list[Callable[[], Case]]:
    """Case builders (data is made when a case runs, and freed after it)."""
    cases: list[Callable[[], Case]] = []
    dtypes = [jnp.int32, jnp.float32] if quick else [jnp.int32, jnp.float32, jnp.int64,
                                                     jnp.float64]
    for log2 in sizes["sort"]:
        for dtype in dtypes:
            if not x64_ok(dtype):
                continue
            for argsort in (False, True):
                cases.append(lambda d=dtype, lg=log2, a=argsort: sort_case(d, lg, a, cfg))
    for log2 in (sizes["sort"][-1:] if quick else sizes["sort"]):
        cases.append(lambda lg=log2: sort_case(jnp.int32, lg, False, cfg, presorted=True))
    cases.append(lambda: sort_by_key_case(sizes["sort_by_key"]))
    cases.extend(lax_sort_cases(sizes["lax_sort"]))
    for width in (512,) if quick else ROW_WIDTHS:
        if width < 1 << sizes["rows"]:
            cases.append(lambda w=width: rows_case(sizes["rows"], w, cfg))
    cases.append(lambda: searchsorted_rows_case(sizes["search"]))
    cases.append(lambda: searchsorted_case(sizes["search"], cfg, quick))
    return cases
