# The tuning table's arithmetic that only the CUDA kernels run, checked on the host (DESIGN: CPU
# CI tests the index arithmetic the GPU depends on): the rows kernel's shape (tuning.h
# merge_rows_shape) for every row length up to a tile, for every key and payload width.
from __future__ import annotations

import math

import pytest

from jax_mergepath import _cpu

MAX_ROWS_PER_BLOCK = 256  # tuning.h kMaxRowsPerTile


@pytest.mark.parametrize("key_bytes", [1, 2, 4, 8])
@pytest.mark.parametrize("payload_bytes", [0, 1, 2, 4, 8])
def test_rows_kernel_shape(key_bytes, payload_bytes):
    threads, items, _, _ = _cpu.merge_rows_shape(key_bytes, payload_bytes, 1)
    tile = threads * items
    assert tile == _cpu.merge_tile(key_bytes, payload_bytes)
    shared_slots = tile + 3 * (16 // key_bytes) + 1  # tile_io.cuh kSharedSlots
    for length in range(1, tile + 1):
        _, _, rows, per_row = _cpu.merge_rows_shape(key_bytes, payload_bytes, length)
        assert per_row == math.ceil(length / items), length
        if length > tile - items:  # a row's last thread may read `items` past its row
            assert rows == 0, length
            continue
        assert 1 <= rows <= MAX_ROWS_PER_BLOCK, length
        assert rows * per_row <= threads, length  # a thread group a row
        assert rows * length <= tile - items, length
        # The furthest key a thread reads: the first range's misalignment, its rows, then at
        # most `items` past the last row (both sides exhausted), inside the staged buffer.
        assert (16 // key_bytes - 1) + rows * length + items < shared_slots, length
