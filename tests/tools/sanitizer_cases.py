"""A small GPU workload for compute-sanitizer (memcheck, racecheck): every kernel path once.

Tiled, rows and packed merges, float32 keys (FPU compares), every payload, descending, ragged
rows, merge_runs and co_rank; block sorts of long and packed short rows, sort passes, presorted
rows, every sort payload, quad, eight-way and ragged passes, the wide block sorts (4- and 8-byte
keys), searchsorted (binary and merge path, short rows in the rows kernel), the radix path (CUB,
counting sort and scatter), top_k (every strategy forced: rows in registers, a block a row, the
grid and the stream strategy with a block or the merge sort over their candidates, the exact
paths); sizes around the tiles; results are checked against numpy so a
silent error also fails.

Run from the repository root on a GPU machine (perf/gpu/run_on_gpu.sh does, memcheck and
racecheck; JMP_SANITIZER_CASES picks a subset):

    XLA_PYTHON_CLIENT_PREALLOCATE=false compute-sanitizer --tool memcheck --error-exitcode 3
        --target-processes all python3 tests/tools/sanitizer_cases.py
"""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jax_mergepath as jmp
from jax_mergepath import _cpu, _ffi


def check(got, want, what: str) -> None:
    if not np.array_equal(np.asarray(got), np.asarray(want)):
        print("MISMATCH", what)
        sys.exit(2)


def main() -> None:
    rng = np.random.default_rng(0)
    assert jax.devices()[0].platform == "gpu", jax.devices()
    # JMP_SANITIZER_CASES: "all" (default), "base" (all but the 8-byte wide block sorts),
    # "wide64" (only those), "search" (searchsorted only), "radix" (the radix path only),
    # "passes" (the quad, eight-way and ragged passes only), "ragged" (the ragged merge only)
    # or "topk" (top_k only): racecheck of everything passes one device call's 10 minutes.
    which = os.environ.get("JMP_SANITIZER_CASES", "all")
    kinds = ("all", "base", "wide64", "search", "radix", "passes", "ragged", "topk")
    if which not in kinds:
        sys.exit(f"JMP_SANITIZER_CASES={which!r}: expected one of {', '.join(kinds)}")
    if which == "search":
        search_cases(rng)
    if which == "radix":
        radix_cases(rng, scanned=True)
    if which == "passes":
        pass_cases(rng)
    if which == "ragged":
        ragged_cases(rng)
    if which in ("all", "topk"):
        topk_cases(rng)
    if which in ("all", "base"):
        base_cases(rng)
    if which in ("all", "wide64"):
        wide64_cases(rng)
    print("sanitizer cases OK")


def base_cases(rng: np.random.Generator) -> None:
    tile = _cpu.merge_tile(4, 0)  # int32 keys, no payload
    cases = [(3000, 2900, 1), (5, 7, 300), (40, 1, 33), (tile, 1, 2), (tile + 3, tile - 1, 2)]
    cases.append((2 * tile + 5, 2 * tile - 7, 1100))  # > 4096 boundaries: thread partition
    cases.append((tile - 19 - 300, 300, 5))  # the rows kernel's longest rows
    for m, n, rows in cases:
        a = np.sort(rng.integers(0, 50, (rows, m)), axis=-1).astype(np.int32)
        b = np.sort(rng.integers(0, 50, (rows, n)), axis=-1).astype(np.int32)
        cat = np.concatenate([a, b], -1)
        perm = np.argsort(cat, axis=-1, kind="stable")
        out, idx = jmp.merge(a, b, return_indices=True)
        check(idx, perm, f"merge idx {m},{n},{rows}")
        k, v = jmp.merge_by_key(a, b, a.astype(np.float32), b.astype(np.float32))
        check(v, np.take_along_axis(cat, perm, -1).astype(np.float32), "merge_by_key")
        desc = jmp.merge(a[..., ::-1], b[..., ::-1], descending=True)
        check(desc, np.sort(cat, axis=-1)[..., ::-1], "descending")
        fa, fb = a.astype(np.float32) - 25.5, b.astype(np.float32) - 25.5  # FPU compares
        check(jmp.merge(fa, fb), np.sort(cat, axis=-1).astype(np.float32) - 25.5, "float32")
        ragged = jmp.merge(a, b, a_length=m // 2, b_length=n // 3)
        assert ragged.shape == (rows, m + n)
        runs = jmp.merge_runs(np.sort(cat, -1), m // 2)
        check(runs, np.sort(cat, -1), "merge_runs")
        ks = jnp.broadcast_to(
            jnp.arange(0, m + n + 1, 97, dtype=jnp.int32), (rows, len(range(0, m + n + 1, 97)))
        )
        jax.block_until_ready(jmp.co_rank(ks, a, b))
    unsorted = rng.integers(0, 1000, 10000).astype(np.int32)
    jax.block_until_ready(jmp.merge(unsorted, unsorted[::-1].copy()))
    many = rng.integers(0, 1000, (1100, 2 * tile)).astype(np.int32)  # unsorted, many boundaries
    jax.block_until_ready(jmp.merge(many, many[:, ::-1].copy(), return_indices=True))
    # Unsorted input through every fallback (tests/test_merge_unsorted.py checks the results):
    # rows kernel, packed kernel (ragged), merge_runs, values.
    rows = rng.integers(0, 1000, (500, 64)).astype(np.int32)
    jax.block_until_ready(jmp.merge(rows, rows[:, ::-1].copy(), return_indices=True))
    jax.block_until_ready(jmp.merge(rows, rows, a_length=rows[:, 0] % 65, b_length=7))
    jax.block_until_ready(jmp.merge_runs(many[:3], np.array([5, tile, 2 * tile - 1])))
    jax.block_until_ready(jmp.merge_by_key(many[:2], many[:2], many[:2] * 1.0, many[:2] * 1.0))
    sort_cases(rng)


def sort_cases(rng: np.random.Generator) -> None:
    tile = _cpu.sort_tile(4, 0)
    for rows, d in [(1, 3 * tile + 17), (3, tile - 1), (70, 64), (9, 100), (1, 1000), (2, 5)]:
        x = rng.integers(0, 40, (rows, d)).astype(np.int32)
        want = np.argsort(x, axis=-1, kind="stable").astype(np.int32)
        check(jmp.argsort(x), want, f"argsort {rows}x{d}")
        check(jmp.sort(x, descending=True), -np.sort(-x, axis=-1), f"sort desc {rows}x{d}")
        k, v = jmp.sort_by_key(x, x.astype(np.float32) * 2)
        check(v, np.take_along_axis(x, want, -1).astype(np.float32) * 2, "sort_by_key")
        check(jmp.sort(np.sort(x, axis=-1)), np.sort(x, axis=-1), "presorted")
    pass_cases(rng)
    radix_cases(rng)
    # The wide block sorts (tuning/sort.h sort_takes_wide_tile): 4-byte keys alone (integers,
    # floats) in rows of 13 levels; float tiles without NaN and -0.0 (plain compares, the min / max
    # network) and, in row 1, tiles with a -0.0 (the NaN-last order).
    wide = rng.integers(-(2**31), 2**31, (3, 3 * 2**23 + 7)).astype(np.int32)
    check(jmp.sort(wide), np.sort(wide, axis=-1), "wide block sort")
    wide_f = (wide >> 8).astype(np.float32)
    wide_f[1, ::40000] = -0.0
    # Bit-exact against a stable sort (array_equal alone would take -0.0 for +0.0).
    want_f = np.take_along_axis(wide_f, np.argsort(-wide_f, axis=-1, kind="stable"), -1)
    got_f = np.asarray(jmp.sort(wide_f, descending=True))
    check(got_f.view(np.uint32), want_f.view(np.uint32), "wide float block sort")
    search_cases(rng)


def pass_cases(rng: np.random.Generator) -> None:
    # Quad and eight-way passes (tuning/sort.h sort_pass_factor; merge sorts forced: as dispatched,
    # the 4-byte ones take CUB's radix sort): argsort of int32 keys (4 + 4 bytes), 2^24 + 3
    # keys, 12 levels after the wide 5888-key tile: four eight-way passes; argsort of int64 keys
    # (8 + 4 bytes) descending, 2^24 + 5 keys, 11 levels after the 8704-key tile: a quad, then
    # three eight-way passes, groups of fewer than eight runs at the end; int64 keys alone (the
    # eight-way kernel with the most shared memory); int32 keys alone, 2^26 + 1 keys, 14 levels
    # after the 4352-key tile: seven quads.
    with _ffi.forced_sort_method("merge"):
        few = rng.integers(0, 1000, 2**24 + 3).astype(np.int32)
        want_few = np.argsort(few, kind="stable").astype(np.int32)
        check(jmp.argsort(few), want_few, "eight-way argsort")
        x64 = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", True)  # (8-byte keys)
        try:
            wide = rng.integers(-(2**40), 2**40, 2**24 + 5)
            # (jnp's stable descending order: the reversed axis sorted, reversed back)
            want = wide.size - 1 - np.argsort(wide[::-1], kind="stable")[::-1]
            check(jmp.argsort(wide, descending=True), want, "quad + eight-way argsort int64")
            # 8-byte keys alone (as dispatched: CUB's direct radix sort), 2^24 + 7 keys, 11
            # levels after the 8448-key tile: a quad, then three eight-way passes.
            keys64 = rng.integers(-(2**62), 2**62, 2**24 + 7)
            check(jmp.sort(keys64), np.sort(keys64), "quad + eight-way sort int64")
        finally:
            jax.config.update("jax_enable_x64", x64)
        keys = rng.integers(-(2**31), 2**31, 2**26 + 1).astype(np.int32)
        check(jmp.sort(keys), np.sort(keys), "quad sort")
        rows = rng.integers(-(2**31), 2**31, (2, 2**23 + 3)).astype(np.int32)
        rows[1] = np.sort(rows[1])  # (row_done: its partitions and merges skip it)
        check(jmp.argsort(rows), np.argsort(rows, -1, kind="stable").astype(np.int32),
              "passes beside a sorted row")
    ragged_cases(rng)


def ragged_cases(rng: np.random.Generator) -> None:
    """The ragged merge (kernels/ragged_merge.cuh): 3 and 8 runs with gaps, placed in the row in
    any order, clamped starts and lengths, keys alone and with 4- and 8-byte values (x64 on),
    int32 and int64 keys, two rows, a row's merge cut at the shorter total."""
    from jax_mergepath._dispatch import merge_ragged_rows

    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        for runs, key, value in ((3, np.int32, None), (8, np.int32, np.int32),
                                 (8, np.int64, np.int64)):
            lengths = rng.integers(0, 20000, (2, runs)).astype(np.int32)
            order = rng.permutation(runs)  # run order[i] is the i-th in the row
            starts = np.zeros_like(lengths)
            starts[:, order] = np.cumsum(lengths[:, order] + 5, axis=1) - lengths[:, order] - 5
            span = int((starts + lengths).max()) + 11
            x = rng.integers(0, 500, (2, span)).astype(key)
            for row in range(2):
                for s, n in zip(starts[row], lengths[row], strict=True):
                    x[row, s:s + n] = np.sort(x[row, s:s + n])
            out_length = int(lengths.sum(1).min())  # (the longer row's merge is cut there)
            v = np.arange(x.size).reshape(x.shape).astype(value or np.int32)
            keys, moved = merge_ragged_rows(x, starts, lengths, [] if value is None else [v],
                                            out_length=out_length, descending=False)
            row = int(np.argmin(lengths.sum(1)))
            pos = np.concatenate([np.arange(s, s + n) for s, n in
                                  zip(starts[row], lengths[row], strict=True)])
            pos = pos[np.argsort(x[row, pos], kind="stable")]
            check(keys[row], x[row, pos], f"ragged merge {runs} runs")
            if value is not None:
                check(moved[0][row], v[row, pos], f"ragged merge {runs} runs, values")
        bad = np.array([[-7, 30, 10**6]], np.int32)  # starts and lengths clamped into the row
        jax.block_until_ready(merge_ragged_rows(np.sort(x[:1], -1), bad, bad, [],
                                                out_length=500, descending=True))
    finally:
        jax.config.update("jax_enable_x64", x64)


def radix_cases(rng: np.random.Generator, scanned: bool = False) -> None:
    """The radix path (tuning/radix.h): CUB's with a float fix-up, CUB's direct with a reversal
    (4- and 8-byte keys), float32 keys alone direct with the NaN fix-up; one-byte keys' counting
    sort, a block a row and in tiles (one long row; unaligned rows), and counting scatter; CUB's
    segmented sort of rows of 2-byte keys."""
    with _ffi.forced_sort_method("radix"):
        f = rng.standard_normal(3 * 4096 + 5).astype(np.float32)
        f[::97] = -0.0
        want_f = np.take_along_axis(f, np.argsort(f, kind="stable"), -1)
        check(np.asarray(jmp.sort(f)).view(np.uint32), want_f.view(np.uint32), "radix float")
        # keys alone ascending go direct: NaNs of both signs and two patterns move (the fix-up)
        f[::89] = np.array([0x7FC00000, 0xFFC00000, 0x7FC00001], np.uint32).view(np.float32)[
            np.arange(f[::89].size) % 3]
        want_f = np.take_along_axis(f, np.argsort(f, kind="stable"), -1)
        check(np.asarray(jmp.sort(f)).view(np.uint32), want_f.view(np.uint32), "radix nan fix")
        fv = np.arange(f.size, dtype=np.float32)  # (with values: the order keys' fix-up)
        check(np.asarray(jmp.sort_by_key(f, fv)[0]).view(np.uint32), want_f.view(np.uint32),
              "radix float pairs")
        if scanned:  # (the radix set alone: 4M keys would slow racecheck of "base" / "all")
            # a row of more than kRadixFinishSelfTiles encode blocks: its counts scanned first
            g = rng.standard_normal(1026 * 4096 + 5).astype(np.float32)
            g[::997], g[::1999] = -0.0, np.nan
            want_g = np.take_along_axis(g, np.argsort(g, kind="stable"), -1)
            gv = np.arange(g.size, dtype=np.float32)
            check(np.asarray(jmp.sort_by_key(g, gv)[0]).view(np.uint32), want_g.view(np.uint32),
                  "radix scanned")
            g[::1999] = -np.nan  # (keys alone, direct: many tiles' NaNs moved)
            want_g = np.take_along_axis(g, np.argsort(g, kind="stable"), -1)
            check(np.asarray(jmp.sort(g)).view(np.uint32), want_g.view(np.uint32),
                  "radix nan fix, many tiles")
        i = rng.integers(-(2**31), 2**31 - 1, 3 * 4096 + 5).astype(np.int32)  # (direct)
        check(jmp.sort(i, descending=True), np.sort(i)[::-1], "radix direct")
        v = np.arange(i.size, dtype=np.float32)
        check(jmp.sort_by_key(i, v)[1], v[np.argsort(i, kind="stable")], "radix direct pairs")
        for shape in [(5, 5001), (3 * 2**15 + 9,)]:
            b = rng.integers(-128, 128, shape).astype(np.int8)
            check(jmp.sort(b, descending=True), -np.sort(-b.astype(np.int16), -1), "counting")
        b = rng.integers(0, 7, 5 * 4096 + 3).astype(np.uint8)
        check(jmp.argsort(b), np.argsort(b, kind="stable").astype(np.int32), "scatter")
        # rows of 2-byte keys: CUB's segmented sort, a float fix-up a row, direct reversed rows
        h = rng.standard_normal((3, 2 * 4096 + 7)).astype(np.float16)
        h[:, ::89] = -0.0
        want_h = np.take_along_axis(h, np.argsort(h, -1, kind="stable"), -1)
        check(np.asarray(jmp.sort(h)).view(np.uint16), want_h.view(np.uint16), "segmented float")
        check(jmp.argsort(h, descending=True),
              np.argsort(-h.astype(np.float32), -1, kind="stable").astype(np.int32),
              "segmented argsort")
        s = rng.integers(-(2**15), 2**15 - 1, (3, 2 * 4096 + 7)).astype(np.int16)
        check(jmp.sort(s, descending=True), -np.sort(-s.astype(np.int32), -1), "segmented direct")
    jax.config.update("jax_enable_x64", True)  # (8-byte keys: int64 direct, reversed)
    try:
        with _ffi.forced_sort_method("radix"):
            w = rng.integers(-(2**63), 2**63 - 1, 3 * 4096 + 5, dtype=np.int64)
            check(jmp.sort(w, descending=True), np.sort(w)[::-1], "radix direct int64")
    finally:
        jax.config.update("jax_enable_x64", False)


def search_cases(rng: np.random.Generator) -> None:
    """searchsorted: binary, merge path (tiled), short rows (rows kernel), unsorted queries."""
    a = np.sort(rng.integers(0, 100, 20000)).astype(np.int32)
    q = rng.integers(-5, 105, 7000).astype(np.int32)
    for side in ("left", "right"):
        check(jmp.searchsorted(a, q, side), np.searchsorted(a, q, side), "searchsorted")
        qs = np.sort(q)
        check(jmp.searchsorted(a, qs, side, sorted_v=True), np.searchsorted(a, qs, side),
              "searchsorted sorted_v")
        # Queries that break the sorted_v promise over many tiles: the gaps between tiles'
        # clamped ends and the next tiles' starts get written (merge_kernels.cuh store_gap_ranks).
        bad = -np.sort(-rng.integers(-5, 105, 2**18)).astype(np.int32)
        got = np.asarray(jmp.searchsorted(np.sort(bad[::3]), bad, side, sorted_v=True))
        check(got.min() >= 0 and got.max() <= bad[::3].size, True, "searchsorted unsorted v")
        # Short rows, several to a block of the rows kernel: sorted and unsorted queries.
        ra = np.sort(rng.integers(0, 100, (300, 500)), axis=-1).astype(np.int32)
        rq = rng.integers(-5, 105, (300, 70)).astype(np.int32)
        want = np.stack([np.searchsorted(r, s, side) for r, s in zip(ra, np.sort(rq), strict=True)])
        check(jmp.searchsorted(ra, np.sort(rq), side, sorted_v=True), want, "searchsorted rows")
        got = np.asarray(jmp.searchsorted(ra, rq, side, sorted_v=True))
        check(got.min() >= 0 and got.max() <= 500, True, "searchsorted rows unsorted v")


def topk_cases(rng: np.random.Generator) -> None:
    """top_k on every strategy (tuning/topk.h), each forced where it can run the call: rows in
    registers (a warp, blocks; the exact path on ties), a block a row (scalar and vectorized;
    short and long rows, the exact path on equal rows), the grid and the stream strategy then a
    block over the candidates or their merge sort (4-byte composites), the exact path forced
    (equal keys); against the CPU's."""
    from jax_mergepath._select_primitive import STRATEGIES, forced_route

    cpu = jax.devices("cpu")[0]

    def same(x, k, largest=True):
        want = jmp.top_k(jax.device_put(x, cpu), k, largest=largest)
        for name in ("auto", *(f"kernel:{s}" for s in STRATEGIES)):
            strategy = STRATEGIES[name[7:]] if name != "auto" else -1
            if strategy != -1 and _cpu.topk_resolve_strategy(strategy, k, x.shape[-1]) < 0:
                continue
            with forced_route(name):
                got = jax.jit(lambda x: jmp.top_k(x, k, largest=largest))(x)
            check(got[1], want[1], f"top_k indices {x.shape} k={k} {name}")
            check(np.asarray(got[0]).view(np.uint8), np.asarray(want[0]).view(np.uint8),
                  f"top_k values {x.shape} k={k} {name}")

    same(rng.standard_normal((300, 512)).astype(np.float32), 8)
    same(rng.standard_normal((33, 100)).astype(np.float64), 5, largest=False)
    same(rng.integers(-3, 3, (64, 4000)).astype(np.int8), 30)  # (the registers' exact path)
    same(rng.integers(-9, 9, (40, 20000)).astype(np.int32), 300, largest=False)
    same(np.zeros((16, 4096), np.float32), 32)  # (the block's exact path)
    x = rng.standard_normal(2**18).astype(np.float32)
    same(x, 100)
    same(x, 3000)
    same(np.full(2**18, 7, np.int16), 10)  # (the grid's exact path)


def wide64_cases(rng: np.random.Generator) -> None:
    """The wide block sorts of 8-byte keys, in dynamic shared memory past 48 KB (256 x 33 keys
    alone, 512 x 17 with positions): 2^24 keys, quads of 128 MB a pass and more."""
    jax.config.update("jax_enable_x64", True)  # (last: the other cases keep their dtypes)
    big64 = rng.integers(-(2**62), 2**62, 2**24 + 3)
    check(jmp.sort(big64), np.sort(big64), "wide int64 block sort")
    f64 = (big64 >> 20).astype(np.float64)
    f64[::100_003] = np.nan
    f64[7::100_019] = -0.0
    check(jmp.argsort(f64), np.argsort(f64, kind="stable").astype(np.int32), "wide f64 argsort")


if __name__ == "__main__":
    main()
