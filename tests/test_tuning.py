# The tuning table's arithmetic that only the CUDA kernels run, checked on the host (DESIGN: CPU
# CI tests the index arithmetic the GPU depends on): the rows kernel's shape (tuning.h
# merge_rows_items + merge_rows_shape) for every row length up to a tile, for every key and
# payload width.
from __future__ import annotations

import math

import pytest

from jax_mergepath import _cpu

MAX_ROWS_PER_BLOCK = 256  # tuning.h kMaxRowsPerTile


@pytest.mark.parametrize("key_bytes", [1, 2, 4, 8])
@pytest.mark.parametrize("payload_bytes", [0, 1, 2, 4, 8])
def test_rows_kernel_shape(key_bytes, payload_bytes):
    tile = _cpu.merge_tile(key_bytes, payload_bytes)
    threads, tile_items = 256, tile // 256
    assert threads * tile_items == tile
    for length in range(1, tile + 1):
        t, items, rows, per_row = _cpu.merge_rows_shape(key_bytes, payload_bytes, length)
        assert t == threads, length
        # the tile's items, or two fewer when that saves >= 5% of a row's merge steps
        slots = {i: math.ceil(length / i) * i for i in (tile_items, tile_items - 2)}
        if items == tile_items - 2:
            assert 20 * slots[items] <= 19 * slots[tile_items], length
        else:
            assert items == tile_items, (length, items)
            narrow_fits = length <= threads * (tile_items - 2) - (tile_items - 2)
            assert not narrow_fits or 20 * slots[tile_items - 2] > 19 * slots[items], length
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
