# The tuning table's arithmetic that only the CUDA kernels run, checked on the host
# (docs/architecture.md: CPU CI tests the index arithmetic the GPU depends on): the rows kernel's
# shape (tuning/merge.h merge_rows_items + merge_rows_shape) for every row length up to a tile, for
# every key width and payload kind (merge_shape_for); the quad pass's split search (merge_path.h
# quad_co_rank); which block sort the CUDA sort takes (tuning/sort.h cuda_sort_shape: the wide tile
# only where it leaves fewer passes); and that the CUDA workspaces' per-row bounds
# (tuning/workspace.h merge_workspace_bound, sort_workspace_bound, as Python evaluates them) are
# never below the exact sizes the handlers check.
from __future__ import annotations

import math

import numpy as np
import pytest

from jax_mergepath import _cpu, _ffi

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

MAX_ROWS_PER_BLOCK = 256  # tuning/merge.h kMaxRowsPerTile


def _row_slots(length: int, items: int) -> int:
    """Merge steps a row's thread group runs: ceil(length / items) threads of `items` each."""
    return math.ceil(length / items) * items


def _rows_fit(length: int, threads: int, items: int) -> bool:
    """tuning/merge.h merge_rows_shape gives rows of `length` a block at `items` a thread."""
    per_row = math.ceil(length / items)
    return items >= 3 and length <= threads * items - items and per_row <= threads


# (payload kind, value bytes) of key_types.h PayloadKind: none, index, values of 1-8 bytes,
# searchsorted's ranks of A and of B.
PAYLOADS = [(0, 0), (1, 0), (2, 1), (2, 2), (2, 4), (2, 8), (3, 0), (4, 0)]


# tuning/merge.h kRowsItemsTable: rows of these lengths of 4-byte keys alone (the 256 x 19 shape)
# take these items a thread
ROWS_ITEMS_TABLE = {16: 17, 24: 13, 32: 17, 48: 17, 64: 17, 96: 15, 128: 19}


@pytest.mark.parametrize("key_bytes", [1, 2, 4, 8])
@pytest.mark.parametrize(("payload", "value_bytes"), PAYLOADS, ids=str)
def test_rows_kernel_shape(key_bytes, payload, value_bytes):
    threads, tile_items, _ = _cpu.merge_shape_for(key_bytes, payload, value_bytes)
    assert threads == 256
    table = ROWS_ITEMS_TABLE if (key_bytes, threads, tile_items) == (4, 256, 19) else {}
    assert bool(table) == (key_bytes == 4 and payload == 0)
    for length in range(1, threads * tile_items + 1):
        items, rows, per_row = _cpu.merge_rows_shape(key_bytes, threads, tile_items, length)
        # the table's items for its lengths; else the tile's items, or 2, 4 or 6 fewer (at least
        # 3) when the rows still fit and a row's thread group then steps through the fewest
        # slots, >= 5% fewer than with the tile's
        better = [
            i for i in (tile_items - 2, tile_items - 4, tile_items - 6)
            if all(_rows_fit(length, threads, j) for j in range(i, tile_items, 2))
            and 20 * _row_slots(length, i) <= 19 * _row_slots(length, tile_items)
        ]
        if length in table:
            assert items == table[length], length
        elif better:
            fewest = min(_row_slots(length, i) for i in better)
            assert items == max(i for i in better if _row_slots(length, i) == fewest), length
        else:
            assert items == tile_items, (length, items)
        shared_slots = threads * items + 3 * (16 // key_bytes) + 1  # tile_io.cuh kSharedSlots
        assert per_row == math.ceil(length / items), length
        if length > threads * items - items:  # a row's last thread may read `items` past it
            assert rows == 0, length
            continue
        assert 1 <= rows <= MAX_ROWS_PER_BLOCK, length
        assert rows * per_row <= threads, length  # a thread group a row
        assert rows * length <= threads * items - items, length
        # The furthest key a thread reads: the first range's misalignment, its rows, then at
        # most `items` past the last row (both sides exhausted), inside the staged buffer.
        assert (16 // key_bytes - 1) + rows * length + items < shared_slots, length


def _quad_split_brute(runs: list[list[int]], diag: int) -> tuple[int, int, int]:
    """(x, a, c) at output diag of the stable merge of runs A, B, C, D (ties in that order)."""
    tagged = sorted((key, r) for r, run in enumerate(runs) for key in run)  # stable: (key, run)
    taken = [r for _, r in tagged[:diag]]
    return taken.count(0) + taken.count(1), taken.count(0), taken.count(2)


@pytest.mark.parametrize("seed", range(6))
def test_quad_split_matches_the_stable_four_way_merge(seed):
    # merge_path.h quad_co_rank (the CUDA quad pass's partition) on the host: for four sorted
    # runs (empty ones, duplicates across runs, one key everywhere) and every quad tile
    # boundary, the split equals the brute-force stable merge's.
    rng = np.random.default_rng(seed)
    for _ in range(40):
        width = int(rng.integers(1, 90))
        lengths = [width] * 4
        if rng.random() < 0.6:
            lengths = [int(rng.integers(0, width + 1)) for _ in range(4)]
        distinct = int(rng.choice([1, 3, 50, 10**6]))
        runs = [sorted(int(k) for k in rng.integers(0, distinct, n)) for n in lengths]
        tile = int(rng.integers(1, 40))
        total = sum(lengths)
        for diag in sorted({*range(0, total, tile), total}):
            got = tuple(_cpu.quad_split(*runs, diag, tile))
            assert got == _quad_split_brute(runs, diag), (runs, diag, tile)


def test_quad_split_refuses_what_the_kernels_never_pass():
    # The hook takes the kernels' preconditions (sorted runs, a tile boundary) as checks.
    runs = ([1, 2], [0, 5], [3], [])
    with pytest.raises(ValueError, match="multiple of tile"):
        _cpu.quad_split(*runs, 3, 2)
    with pytest.raises(ValueError, match="multiple of tile"):
        _cpu.quad_split(*runs, 2, 0)
    with pytest.raises(ValueError, match="sorted"):
        _cpu.quad_split([2, 1], [], [], [], 2, 2)
    assert tuple(_cpu.quad_split(*runs, 5, 2)) == (4, 2, 1)  # the end boundary


def _levels(tile: int, length: int) -> int:
    """Two-way merge levels after a block sort of `tile` (tuning/sort.h sort_passes)."""
    levels = 0
    while tile << levels < length:
        levels += 1
    return levels


@pytest.mark.parametrize(
    ("key_bytes", "payload_bytes", "rows", "length", "wide"),
    [
        (4, 0, 1, 2**27, True),  # 15 levels, quads: the wide tile leaves 14
        (4, 0, 1, 150 * 2**20, True),  # 16 levels (8 quads): 14 (7)
        (4, 0, 1, 2**27 + 5, True),
        (4, 0, 3, 3 * 2**23 + 7, True),  # rows of 13 levels
        (4, 0, 1, 2**26 + 1, False),  # 14 levels: 13 (seven passes either way)
        (4, 4, 1, 2**27, False),  # argsort: 16 levels, 15 with the wide tile: 8 passes either way
        (4, 4, 1, 2**24, True),  # argsort / sort_by_key 2^24: 13 levels, 12
        (4, 4, 1, 2**26, True),  # 15 levels, 14
        (4, 4, 1, 2**23, False),  # 64 MB a pass: no quads
        (8, 0, 1, 2**27, True),  # 8-byte keys: 16 levels (8 quads), 14 (7)
        (8, 0, 1, 2**24, True),  # 13 levels, 11
        (8, 4, 1, 2**27, True),  # argsort of 8-byte keys: 16 levels, 14
        (8, 4, 1, 2**24, True),  # 13 levels, 11
        (8, 0, 1, 2**23, False),  # 64 MB a pass: no quads
        (8, 8, 1, 2**27, False),  # 8-byte values: no wide shape
        (4, 0, 1, 2**25 + 1, False),  # below quad_min_bytes: no quads
        (4, 0, 2**14, 5000, False),  # rows the wide tile would hold whole
        (4, 4, 1, 4096, True),  # one row the wide tile holds whole: one launch, no pass
        (4, 0, 1, 4353, True),
        (4, 0, 1, 9984, True),
        (8, 0, 1, 4096, True),
        (8, 4, 1, 8704, False),  # its wide block (~105 KB) past kWideShortRowMaxBytes
        (4, 4, 1, 2816, False),  # the narrow tile holds it
        (4, 4, 1, 5889, False),  # past the wide tile: no quads
        (4, 4, 2, 4096, False),  # two rows
        (2, 4, 1, 4096, True),  # 2-byte keys with positions: only there (they take no quads)
        (2, 4, 1, 2**26, False),
        (2, 0, 1, 8000, False),  # 2-byte keys alone: no wide shape
        (2, 0, 1, 2**28, False),  # 2-byte keys take no quads
    ],
)
def test_cuda_sort_takes_the_wide_tile_only_where_it_saves_a_pass(
    key_bytes, payload_bytes, rows, length, wide
):
    tile = int(_cpu.sort_tile(key_bytes, payload_bytes))
    threads, items = _cpu.cuda_sort_shape(key_bytes, payload_bytes, rows, length)
    assert items % 2 == 1  # odd: no bank conflicts in the block's merge rounds
    assert (threads * items != tile) == wide
    if wide:  # fewer passes: ceil(levels / 2) with quads (a two-way pass for an odd count)
        assert (_levels(threads * items, length) + 1) // 2 < (_levels(tile, length) + 1) // 2


# (payload kind, value bytes) of a sort: none, argsort's positions, values of 1-8 bytes.
SORT_PAYLOADS = [(0, 0), (1, 0), (2, 1), (2, 2), (2, 4), (2, 8)]
# Batch rows: one and a few, around the partition's warp / thread crossover (4096 boundaries),
# and enough that rows of a few tiles take quad passes and the wide block sort.
BOUND_ROWS = (1, 2, 3, 7, 100, 1000, 4095, 4097, 2**14, 2**17)


def _lengths_around(*tiles: int) -> set[int]:
    """Row lengths at and beside multiples of each tile, half tiles and powers of two, and a few
    large ones (sorts of several quad passes)."""
    near = {k * t // 2 + e for t in tiles for k in (1, 2, 3, 4, 6, 9) for e in (-1, 0, 1)}
    powers = {2**p + e for p in range(10, 22, 3) for e in (-1, 0, 1)}
    return {n for n in near | powers if n >= 0} | {0, 1, 2, 2**27 + 5, 143 * 2**20, 2**29 + 3}


@pytest.mark.parametrize("key_bytes", [1, 2, 4, 8])
@pytest.mark.parametrize(("payload", "value_bytes"), PAYLOADS, ids=str)
def test_merge_workspace_bound_covers_the_exact_size(key_bytes, payload, value_bytes):
    # rows * per_row(L) >= the exact size for any rows: full rows, ragged rows (valid lengths
    # given) and merge_runs rows; packed rows (no partition) need nothing.
    threads, items, _ = _cpu.merge_shape_for(key_bytes, payload, value_bytes)
    tile = threads * items
    packed = tile // 2 if payload >= 3 else tile  # merge_packed_length
    shapes = [(False, False)] if payload >= 3 else [(False, False), (True, False), (False, True)]
    for length in sorted(_lengths_around(tile, 7 * tile, 255 * tile)):
        bound = _ffi.merge_workspace_per_row(key_bytes, payload, value_bytes, length)
        if length < packed:
            assert bound == 0, length
        if length >= 16 * tile:  # and a small part of the keys' memory
            assert 4 * bound <= length * key_bytes / 64, (length, bound)
        for rows in BOUND_ROWS:
            for ragged, runs in shapes:
                m = length // 3
                exact = _cpu.merge_workspace_elements(
                    key_bytes, payload, value_bytes, rows, m, length - m, ragged, runs
                )
                assert rows * bound >= exact, (rows, length, ragged, runs, bound, exact)
                if length <= packed:
                    assert exact == 0, (rows, length)


@pytest.mark.parametrize("key_bytes", [1, 2, 4, 8])
@pytest.mark.parametrize(("payload", "value_bytes"), SORT_PAYLOADS, ids=str)
def test_sort_workspace_bound_covers_the_exact_size(key_bytes, payload, value_bytes):
    # rows * per_row(L) >= the largest pass's exact size for any rows, two-way, quad and
    # eight-way passes after the narrow or the wide block sort; rows of one block tile (no
    # passes) need nothing.
    carried = 0 if payload == 0 else (value_bytes if payload == 2 else 4)
    block = int(_cpu.sort_tile(key_bytes, carried))
    merge = int(_cpu.merge_tile(key_bytes, carried))
    wide = math.prod(_cpu.cuda_sort_shape(key_bytes, carried, 1, 2**29 + 3))
    quads_seen = eights_seen = 0
    tiles = (255 * 33, 255 * 13, 255 * 11, 253 * 21, 253 * 15, 253 * 11)  # quad and eight-way
    # (tuning/sort.h sort_may_use_eights: keys of 4 or 8 bytes, alone or with 4 bytes, over 4 in
    # all)
    may_use_eights = key_bytes >= 4 and carried in (0, 4) and key_bytes + carried > 4
    for length in sorted(_lengths_around(block, merge, wide, *tiles)):
        bound = _ffi.sort_workspace_per_row(key_bytes, payload, value_bytes, length)
        if length < min(block, merge):  # (no constant per row)
            assert bound == 0, length
        if length >= 16 * block:  # and a small part of the keys' memory
            assert 4 * bound <= length * key_bytes / 64, (length, bound)
        for rows in BOUND_ROWS:
            exact = _cpu.sort_partition_elements(key_bytes, payload, value_bytes, rows, length)
            assert rows * bound >= exact, (rows, length, bound, exact)
            if length <= block:
                assert exact == 0, (rows, length)
            quads_seen += rows * length * (key_bytes + carried) >= 2**28
            eights_seen += may_use_eights and rows * length * (key_bytes + carried) >= 2**27
    # the grid reaches the quad and (where the shape takes them) the eight-way pass sizes
    assert quads_seen and (eights_seen or not may_use_eights)
