# The CUDA sort's radix path (tuning/radix.h "radix path", ffi/cuda/kernels/radix_sort.cuh) against
# the merge sort, bit for bit: every key dtype (the narrow and sub-byte ones through their order
# keys), both directions, keys alone / argsort / a 4-byte value / a pytree payload, inputs with
# -0.0, +0.0 and NaN payloads of both signs (the float fix-up) and ties, sizes from the radix path's
# shortest row to several encode tiles. On the GPU each call is lowered three times: forced
# merge, forced radix, as dispatched. On every machine: the method reaches the FFI call, the CPU
# ignores it, and the workspace bound holds the radix path's; on the GPU CUB's own size query
# stays under it.
from __future__ import annotations

import glob
import os
import re
import tempfile
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import (
    KEY_DTYPES,
    assert_bits_equal,
    dtype_id,
    np_argsort,
    random_keys,
    ref_jnp_sort,
)
from sort_checks import assert_tree_bits_equal

import jax_mergepath as jmp
from jax_mergepath import _cpu, _ffi

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

# Sizes: the radix path's shortest row + 1, a ragged encode tile, several tiles, one large.
SHORTEST = 1024  # tuning/radix.h kRadixShortestRow
TILE = 4096  # tuning/radix.h kRadixEncodeTile
SELF_TILES = 1024  # tuning/radix.h kRadixFinishSelfTiles: longer rows scan their counts first
NAN_FIX_BLOCKS = 1024  # tuning/radix.h kRadixNanFixBlocks: longer rows' blocks loop over tiles
SIZES = [SHORTEST + 1, 5 * TILE - 7, 2**17 + 11]
NARROW = [jnp.dtype(d) for d in ("float8_e4m3fn", "float8_e5m2", "int4")]


def _keys(rng: np.random.Generator, dtype: Any, n: int, pattern: str) -> np.ndarray:
    if dtype == jnp.dtype("int4"):
        return rng.integers(-8, 8, n).astype(dtype)
    if dtype in NARROW:  # float8: float32 keys (specials, NaNs, zeros) rounded
        return np.asarray(random_keys(rng, np.float32, (n,), pattern)).astype(dtype)
    return random_keys(rng, dtype, (n,), pattern)


def _run(method: str, fn: Callable, *args: Any) -> Any:
    """fn(*args) jitted afresh under `method` (the method is read when a call is lowered)."""
    with _ffi.forced_sort_method(method):
        return jax.device_get(jax.jit(lambda *a: fn(*a))(*args))


def _same_three_ways(fn: Callable, *args: Any, what: str) -> Any:
    merge = _run("merge", fn, *args)
    for method in ("radix", "auto"):
        assert_tree_bits_equal(_run(method, fn, *args), merge, f"{what} {method} vs merge")
    return merge


def _lowered_method(fn: Callable, *args: Any, platform: str = "cuda") -> int:
    """The FFI attribute `method` of fn's one sort call, lowered for `platform` (through
    jax.export: no GPU needed)."""
    text = jax.export.export(
        jax.jit(fn), platforms=[platform], disabled_checks=_ffi.export_disabled_checks()
    )(*args).mlir_module()
    found = re.findall(r"method = (\d+) : i64", text)
    assert len(found) == 1, text[:3000]
    return int(found[0])


def test_the_lowering_passes_the_resolved_method():
    # The method is chosen once, at lowering (sort_method.h resolve_sort_method), from the
    # knob: for one row of 2^20 float32 keys alone ascending, auto and radix give the direct
    # radix sort, merge the merge sort; short rows the merge sort under auto; int32 keys alone
    # the direct sort; a
    # symbolic length ADAPTIVE (the launcher decides), or the knob's RADIX; the CPU its own
    # choice whatever the knob.
    M = _ffi.SortMethod
    big = jax.ShapeDtypeStruct((2**20,), jnp.float32)
    small = jax.ShapeDtypeStruct((4096,), jnp.float32)
    ints = jax.ShapeDtypeStruct((2**20,), jnp.int32)
    (n,) = jax.export.symbolic_shape("n")
    symbolic = jax.ShapeDtypeStruct((n,), jnp.float32)
    want = {
        "auto": (M.RADIX_DIRECT, M.MERGE, M.RADIX_DIRECT, M.ADAPTIVE),
        "merge": (M.MERGE, M.MERGE, M.MERGE, M.MERGE),
        "radix": (M.RADIX_DIRECT, M.RADIX_DIRECT, M.RADIX_DIRECT, M.RADIX),
    }
    for knob, methods in want.items():
        with _ffi.forced_sort_method(knob):
            got = tuple(_lowered_method(lambda a: jmp.sort(a), x)  # (fresh: lowerings cache)
                        for x in (big, small, ints, symbolic))
            cpu = (_lowered_method(lambda a: jmp.sort(a), big, platform="cpu"),
                   _lowered_method(lambda a: jmp.sort(a), ints, platform="cpu"),
                   _lowered_method(lambda a: jmp.sort(a), symbolic, platform="cpu"))
        assert got == methods, (knob, got)
        assert cpu == (M.MERGE, M.RADIX, M.ADAPTIVE), (knob, cpu)
    with pytest.raises(ValueError, match="method"):
        with _ffi.forced_sort_method("quick"):
            pass


def _one_row_shards_that_moved(key_bytes: int, payload: int) -> list[tuple]:
    """Batched calls (several rows, or a symbolic count) whose method, read at a shard of
    several rows, gives the launcher's choice of the knob at those rows (the behaviour before
    the method was resolved at lowering), and the one-row shards where the two differ, as
    (knob, integer keys, n, per-row workspace)."""
    M = _ffi.SortMethod
    carried = 4 if payload else 0
    moved = []
    for n in (SHORTEST + 1, 4096, 2**14, 2**16, 2**18, 2**19, 2**20, 2**22, 2**27):
        for knob, integer in ((k, i) for k in ("auto", "radix") for i in (False, True)):
            code = _ffi.SORT_METHODS[knob]
            for rows in (2, 3, 64, None):
                with _ffi.forced_sort_method(knob):
                    method = _ffi.resolve_sort_method("cuda", key_bytes, payload, 4, n,
                                                      rows=rows, integer_keys=integer,
                                                      descending=False)
                    per_row = _ffi.sort_workspace_per_row(key_bytes, payload, 4, n,
                                                          method=method, rows=rows)
                for shard in sorted({1, 2, rows or 64}):
                    # (before, a call with empty spares, RADIX_DIRECT now, ran as forced radix)
                    knob_code = _ffi.SortMethod.RADIX if method == M.RADIX_DIRECT else code
                    before = _cpu.sort_takes_radix(knob_code, key_bytes, carried, shard, n,
                                                   integer)
                    now = _cpu.sort_takes_radix(int(method), key_bytes, carried, shard, n,
                                                integer)
                    if shard > 1 or method == M.RADIX_DIRECT:
                        assert now == before, (knob, integer, n, rows, shard, method)
                    elif now != before:
                        moved.append((knob, integer, n, per_row))
    return moved


@pytest.mark.parametrize("key_bytes", [1, 2, 4, 8])
@pytest.mark.parametrize("payload", [0, 1, 2])
def test_batched_methods_hold_for_every_shard(key_bytes, payload):
    # A call lowered with several rows may run on a shard of fewer (batch partitioning); its
    # method, read by the launcher at the shard's rows (sort_takes_radix), gives the choices
    # the launcher made when it decided from the run-time rows alone, at every shard of several
    # rows. A one-row shard may read it otherwise, where the one-row radix path cannot fit the
    # batched workspace a row, so it merge-sorts either way: the counting scatter's need here
    # (one-byte keys alone decide alike at any count of rows), CUB's on the GPU
    # (test_moved_one_row_shards_decline_cub).
    moved = _one_row_shards_that_moved(key_bytes, payload)
    if key_bytes == 1 and payload == 0:
        assert not moved
    for knob, _, n, per_row in moved:
        if key_bytes == 1:  # the counting scatter: 256 counts a tile of 4096 keys, 256 totals
            assert per_row < _cpu.radix_workspace_elements(1, 4, 1, n, False), (knob, n)


def test_cpu_ignores_the_method(rng):
    x = random_keys(rng, np.float32, (3000,), "special")
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        got = {m: _run(m, lambda a: jmp.argsort(a, descending=True), x) for m in ("merge", "radix")}
    np.testing.assert_array_equal(got["merge"], got["radix"])


@pytest.mark.parametrize("key_bytes", [1, 2, 4, 8])
@pytest.mark.parametrize("payload", [0, 1, 2])
def test_workspace_holds_the_radix_path(key_bytes, payload):
    # A call of one row that may take the radix path gets its workspace on top of the merge
    # sort's; batched rows only for CUB's segmented sort (2-byte keys); forced merge sorts never.
    carried = 4 if payload else 0
    for n in (SHORTEST, SHORTEST + 1, 2**18, 2**20 + 1, 2**27 + 5, 2**31 - 1):
        with _ffi.forced_sort_method("merge"):
            merge = _ffi.sort_workspace_per_row(key_bytes, payload, 4, n)
        assert merge >= _cpu.sort_partition_elements(key_bytes, payload, 4, 1, n)
        radix = _cpu.radix_workspace_elements(key_bytes, carried, 1, n, False)
        direct = _cpu.radix_workspace_elements(key_bytes, carried, 1, n, True)
        M = _ffi.SortMethod
        for method, integer in ((m, i) for m in ("auto", "merge", "radix") for i in (False, True)):
            code = _ffi.SORT_METHODS[method]
            takes = _cpu.sort_takes_radix(code, key_bytes, carried, 1, n, integer)
            rows_take = _cpu.sort_takes_radix(code, key_bytes, carried, 2, n, integer)
            for descending in (False, True):
                with _ffi.forced_sort_method(method):
                    def resolve(rows, d=descending, i=integer, n=n):
                        return _ffi.resolve_sort_method("cuda", key_bytes, payload, 4, n,
                                                        rows=rows, integer_keys=i, descending=d)
                    goes, batched = resolve(1), resolve(2)
                    # (a symbolic count of rows, or 2^31 keys or more in all: never direct)
                    assert resolve(None) == (M.RADIX if rows_take else M.MERGE)
                    assert resolve(-(-2**31 // n)) != M.RADIX_DIRECT
                    one = _ffi.sort_workspace_per_row(key_bytes, payload, 4, n, method=goes,
                                                      rows=1)
                    per_row = _ffi.sort_workspace_per_row(key_bytes, payload, 4, n,
                                                          method=batched, rows=2)
                segmented = _cpu.radix_workspace_per_row(key_bytes, carried, n,
                                                         batched == M.RADIX_DIRECT)
                assert per_row == (max(merge, segmented) if rows_take else merge), (method, n)
                assert segmented == 0 or key_bytes == 2
                assert one == max(merge, {M.MERGE: merge, M.RADIX: radix,
                                          M.RADIX_DIRECT: direct}[goes]), (method, n)
                # direct: integer keys of 2, 4 or 8 bytes alone, of 2 or 4 bytes with values
                # ascending; float keys of 2 or 4 bytes alone ascending
                direct_kind = payload == 0 or (payload == 2 and not descending and key_bytes < 8)
                onesweep = key_bytes != 2 or _ffi.short_keys_onesweep()
                floats = not integer and key_bytes in (2, 4) and payload == 0 and not descending
                want = takes and onesweep and (floats or (integer and key_bytes in (2, 4, 8)
                                                          and direct_kind))
                assert goes == (M.RADIX_DIRECT if want else M.RADIX if takes else M.MERGE), (
                    method, integer, n, descending)
                # batched rows: 2-byte integer keys alone (CUB's segmented sort)
                want = rows_take and integer and key_bytes == 2 and payload == 0 and onesweep
                assert batched == (M.RADIX_DIRECT if want else M.RADIX if rows_take
                                   else M.MERGE), (method, integer, n, descending)
        if key_bytes > 1 and payload != 1:  # CUB's spare buffers and (float32) the NaN state
            counts = _cpu.radix_count_elements(1, n)
            cub = radix - counts
            spares = n * (key_bytes + carried) / 4
            assert spares + counts < direct <= cub + spares + counts + 129
        counting = key_bytes == 1 and carried == 0
        radix_possible = counting or (n > SHORTEST and key_bytes <= 4)
        wide_direct = n > SHORTEST and key_bytes == 8 and carried == 0  # (integer keys only)
        for integer in (False, True):
            assert _cpu.sort_takes_radix(2, key_bytes, carried, 1, n, integer) == (
                radix_possible or (integer and wide_direct))
            assert not _cpu.sort_takes_radix(1, key_bytes, carried, 1, n, integer)
        if key_bytes == 8:
            continue
        if counting:  # the row's 256 counts, for a row longer than a tile of 2^15 keys
            assert radix == (256 if 2**15 < n < 2**31 else 0)
            continue
        if key_bytes == 1:  # the counting scatter: 256 counts a tile of 4096 keys, 256 totals
            assert radix == (256 * -(-n // 4096) + 256 if SHORTEST < n < 2**31 else 0)
            continue
        # counts, the lookback (256 int32 a tile of <= 2^28 keys, tiles of >= 3840 keys), bins
        portions = n // 2**27 + 1
        lookback = 256 * (min(n, 2**28) // 3840)
        assert radix <= 3 * n // 4096 + lookback + 600 * portions * key_bytes + 900
    assert not _cpu.sort_takes_radix(2, 4, 0, 2, 2**20, True)  # rows: the merge sort
    # rows of 2-byte keys (alone or with 4 bytes): CUB's segmented sort, under kAuto from 2^14
    for carried in (0, 4):
        assert _cpu.sort_takes_radix(2, 2, carried, 2, SHORTEST + 1, False)
        assert not _cpu.sort_takes_radix(2, 2, carried, 2, SHORTEST, True)
        assert _cpu.sort_takes_radix(0, 2, carried, 7, 2**14, True)
        assert not _cpu.sort_takes_radix(0, 2, carried, 7, 2**14 - 1, False)
        assert not _cpu.sort_takes_radix(2, 2, carried, 2**16, 2**15, True)  # (2^31 keys)
    assert not _cpu.sort_takes_radix(2, 2, 8, 7, 2**14, True)
    assert not _cpu.sort_takes_radix(2, 4, 8, 1, 2**20, True)  # 8-byte payloads: the merge sort
    # one-byte keys alone: the counting sort, rows of any count and length (kAuto from 256)
    assert _cpu.sort_takes_radix(2, 1, 0, 1000, 3, True)
    assert _cpu.sort_takes_radix(0, 1, 0, 7, 256, False)
    assert not _cpu.sort_takes_radix(0, 1, 0, 7, 255, True)
    assert not _cpu.sort_takes_radix(2, 1, 4, 7, 2**20, True)  # (argsort: CUB, one row only)
    # 8-byte keys: integer keys alone, one row, from 2^22 under kAuto (direct only)
    assert _cpu.sort_takes_radix(0, 8, 0, 1, 2**22, True)
    assert not _cpu.sort_takes_radix(0, 8, 0, 1, 2**22 - 1, True)
    assert not _cpu.sort_takes_radix(2, 8, 0, 1, 2**22, False)  # (float64: the merge sort)
    assert not _cpu.sort_takes_radix(2, 8, 4, 1, 2**22, True)  # (argsort: the merge sort)
    assert not _cpu.sort_takes_radix(2, 8, 0, 2, 2**22, True)


def test_batched_rows_pay_no_radix_workspace():
    # The CUDA lowering (through jax.export, no GPU needed): the splits workspace is
    # (rows, per_row), with the radix path's part only for a call of one row.
    x = jnp.zeros((8, 4096), jnp.int32)  # (signed keys with positions: never direct)
    exported = jax.export.export(
        jax.jit(lambda a: jmp.argsort(a)), platforms=["cuda"],
        disabled_checks=_ffi.export_disabled_checks(),
    )
    per_row = _ffi.sort_workspace_per_row(4, 1, 0, 4096)
    with _ffi.forced_sort_method("radix"):
        batched = exported(x).mlir_module()
        single = exported(x[0]).mlir_module()
        one = _ffi.sort_workspace_per_row(4, 1, 0, 4096, method=_ffi.SortMethod.RADIX, rows=1)
    assert per_row < _cpu.radix_workspace_elements(4, 4, 1, 4096, False) <= one
    assert f"tensor<8x{per_row}xi32>" in batched
    assert f"tensor<{one}xi32>" in single


@pytest.mark.parametrize("rows", [2, 3, 64])
@pytest.mark.parametrize("length", [SHORTEST + 1, 5 * TILE - 7, 2**16])
def test_segmented_workspace_per_row_covers_every_count_of_rows(rows, length):
    # Rows of 2-byte keys (CUB's segmented sort): the lowering's workspace a row covers the
    # call's class counts and CUB's storage at any count of rows, and, direct (spares empty),
    # also one row's direct sort (a one-row shard of a batch-sharded call takes it).
    for carried in (0, 4):
        per_row = _cpu.radix_workspace_per_row(2, carried, length, False)
        assert rows * per_row >= _cpu.radix_workspace_elements(2, carried, rows, length, False)
        assert per_row >= _cpu.radix_workspace_elements(2, carried, 2, length, False) / 2
    per_row = _cpu.radix_workspace_per_row(2, 0, length, True)
    assert rows * per_row >= _cpu.radix_workspace_elements(2, 0, rows, length, True)
    assert per_row >= _cpu.radix_workspace_elements(2, 0, 1, length, True)
    assert _cpu.radix_count_elements(rows, length) == 3 * rows * -(-length // TILE) + 4
    x = jnp.zeros((rows, length), jnp.int16)
    with _ffi.forced_sort_method("radix"):
        text = jax.export.export(
            jax.jit(lambda a: jmp.sort(a, descending=True)), platforms=["cuda"],
            disabled_checks=_ffi.export_disabled_checks(),
        )(x).mlir_module()
        want = _ffi.sort_workspace_per_row(2, 0, 0, length, method=_ffi.SortMethod.RADIX_DIRECT,
                                           rows=rows)
    assert want >= per_row
    if _ffi.short_keys_onesweep():
        assert f"tensor<{rows}x0xi16>" in text  # (direct: the spares empty)
        assert f"tensor<{rows}x{want}xi32>" in text


@pytest.mark.parametrize("dtype", ["int32", "uint16", "float32", "int8", "int64", "float64"])
def test_direct_radix_sort_gets_the_spares_in_its_workspace(dtype):
    # One row of 2-, 4- or 8-byte integer keys alone, or of 2 or 4 with 4-byte values ascending,
    # on the radix path: the lowering leaves the sort's spare buffers empty and gives CUB's
    # spares room in the workspace (so the call holds one spare array a buffer, as every sort);
    # other keys, values descending, batched rows and the forced merge sort keep theirs.
    n = 2**22  # (8-byte keys take it from 2^22)
    x = jnp.zeros((n,), dtype)
    values = jnp.zeros((n,), jnp.float32)
    itemsize = x.dtype.itemsize
    integer = x.dtype.kind in "iu" and itemsize in (2, 4, 8)
    letter = {"int32": "i32", "uint16": "ui16", "float32": "f32", "int8": "i8", "int64": "i64",
              "float64": "f64"}[dtype]
    calls = {  # name: (function, its arguments, payload bytes, may go direct)
        "sort desc": (lambda a: jmp.sort(a, descending=True), (x,), 0, True),
        "sort_by_key": (lambda a, v: jmp.sort_by_key(a, v), (x, values), 4, itemsize < 8),
        "sort_by_key desc": (lambda a, v: jmp.sort_by_key(a, v, descending=True), (x, values), 4,
                             False),
    }
    for name, (fn, args, carried, may) in calls.items():
        for method in ("auto", "merge"):
            with _ffi.forced_sort_method(method):  # (a fresh function: lowerings are cached)
                exported = jax.export.export(
                    jax.jit(lambda *a, f=fn: f(*a)), platforms=["cuda"],
                    disabled_checks=_ffi.export_disabled_checks(),
                )
                text = exported(*args).mlir_module()
                rows = exported(*(a.reshape(2, n // 2) for a in args)).mlir_module()
            # (float32 keys alone: the ascending sort, reversed where descending, goes direct)
            floats = dtype == "float32" and carried == 0
            empty = (integer or floats) and may and method == "auto"
            what = (name, method, text[:3000])
            assert (f"tensor<0x{letter}>" in text) == empty, what
            if letter != "f32":  # (the values' spare: float32 keys' own reads the same)
                assert ("tensor<0xf32>" in text) == (empty and carried > 0), what
            # rows: 2-byte integer keys alone (CUB's segmented sort)
            rows_empty = empty and itemsize == 2 and carried == 0
            assert ("tensor<2x0x" in rows) == rows_empty, (name, method, rows[:3000])
            if empty:
                need = _cpu.radix_workspace_elements(itemsize, carried, 1, n, True)
                assert f"tensor<{need}xi32>" in text, what


@pytest.mark.parametrize(
    "fn, payload, carried, n",
    [(jmp.sort, 0, 0, 2**15 + 1), (jmp.argsort, 1, 4, 2**15 + 1), (jmp.argsort, 1, 4, 12293)],
)
def test_one_byte_rows_get_the_counting_workspace(fn, payload, carried, n):
    # One row of one-byte keys under the radix method: the lowering gives the counting sort its
    # 256 counts (a row longer than a tile) and the counting scatter its 256 a tile + 256, so the
    # GPU takes those paths (they decline, for the merge sort, with less).
    x = jnp.zeros((n,), jnp.uint8)
    with _ffi.forced_sort_method("radix"):
        text = jax.export.export(
            jax.jit(fn), platforms=["cuda"], disabled_checks=_ffi.export_disabled_checks()
        )(x).mlir_module()
        need = _cpu.radix_workspace_elements(1, carried, 1, n, False)
        merge = _ffi.sort_workspace_per_row(1, payload, 4, n)
        assert need > merge, (fn, need, merge)
        assert f"tensor<{need}xi32>" in text, fn


# ----------------------------------------------------------------------------- CPU radix path

INT_DTYPES = [d for d in KEY_DTYPES if d.kind in "biu"]


@pytest.mark.slow  # (the fast tier's integer sorts run this path too)
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=dtype_id)
def test_cpu_integer_radix_path(rng, dtype):
    # tuning/cpu.h cpu_sort_takes_radix: rows from 256 keys (8-byte keys from 2048) take the CPU's
    # radix sort; around both thresholds, rows, one long row, both directions, keys alone /
    # positions / values, and keys sharing digits (the skipped passes) or all equal (none).
    cpu = jax.devices("cpu")[0]
    for shape in [(255,), (256,), (2047,), (2048,), (3, 5001), (2**18 + 7,)]:
        for pattern in ("random", "few", "equal"):
            x = random_keys(rng, dtype, shape, pattern)
            values = rng.standard_normal(shape).astype(np.float32)
            for descending in (False, True):
                what = f"{dtype_id(dtype)} {shape} {pattern} desc={descending}"
                with jax.default_device(cpu):
                    got = jax.device_get(jmp.sort(x, descending=descending))
                    idx = jax.device_get(jmp.argsort(x, descending=descending))
                    keys, vals = jax.device_get(jmp.sort_by_key(x, values, descending=descending))
                assert_bits_equal(got, ref_jnp_sort(x, -1, descending), f"sort {what}")
                want_idx = np_argsort(x, -1, descending)
                np.testing.assert_array_equal(idx, want_idx, f"argsort {what}")
                assert_bits_equal(keys, np.take_along_axis(x, want_idx, -1), f"keys {what}")
                assert_bits_equal(vals, np.take_along_axis(values, want_idx, -1), f"vals {what}")


# ----------------------------------------------------------------------------- GPU

gpu = pytest.mark.requires_gpu


@gpu
@pytest.mark.parametrize("key_bytes", [2, 4, 8])
@pytest.mark.parametrize("payload", [False, True])
@pytest.mark.parametrize("direct", [False, True])
def test_cub_temp_storage_within_the_bound(key_bytes, payload, direct):
    from jax_mergepath import _cuda

    if key_bytes == 8 and (payload or not direct):
        pytest.skip("8-byte keys: only the direct sort of keys alone has CUB instances")
    carried = 4 if payload else 0
    for n in (SHORTEST + 1, 3000, 2**16 + 1, 2**20 + 3, 2**24, 2**27 + 1, 2**29 + 7, 2**31 - 1):
        need = _cuda.radix_temp_bytes(key_bytes, payload, direct, 1, n)
        have = 4 * _cpu.radix_workspace_elements(key_bytes, carried, 1, n, direct)
        have -= 4 * _cpu.radix_count_elements(1, n)  # (direct: float keys' NaN fix-up state)
        assert need <= have, (n, need, have)
    if key_bytes != 2 or (direct and payload):
        return
    # rows: CUB's segmented sort
    for rows, n in ((2, SHORTEST + 1), (7, 3000), (256, 2**16), (2**14, 2**16 + 1)):
        need = _cuda.radix_temp_bytes(2, payload, direct, rows, n)
        have = 4 * _cpu.radix_workspace_elements(2, carried, rows, n, direct)
        if not direct:
            have -= 4 * _cpu.radix_count_elements(rows, n)
        assert need <= have, (rows, n, need, have)


@gpu
@pytest.mark.parametrize("key_bytes", [2, 4, 8])
@pytest.mark.parametrize("payload", [0, 1, 2])
def test_moved_one_row_shards_decline_cub(key_bytes, payload):
    # The one-row shards of batched calls whose resolved method reads otherwise than the knob
    # did at one row (test_batched_methods_hold_for_every_shard): CUB's one-row sorts, direct
    # (integer keys it admits) and of order keys, need more than the batched workspace a row, so
    # the radix path declines there and the shard merge-sorts, before and now.
    from jax_mergepath import _cuda

    carried = 4 if payload else 0
    for knob, integer, n, per_row in _one_row_shards_that_moved(key_bytes, payload):
        if key_bytes < 8 and carried in (0, 4):  # (order keys: 2 and 4 bytes have instances)
            need = _cuda.radix_temp_bytes(key_bytes, payload > 0, False, 1, n)
            have = 4 * (per_row - _cpu.radix_count_elements(1, n))
            if need <= have:
                # The one exception (measured on an H200): under the forced radix knob (for
                # benchmarks), a row CUB sorts in one tile (4096 keys) needs 1 byte: such a
                # one-row shard ran CUB before and merge-sorts now, the same bits.
                assert knob == "radix" and n <= 4096, (knob, integer, n, need, have)
                continue
            assert need > have, (integer, n, need, have)
        direct_kind = payload == 0 or (payload == 2 and key_bytes < 8)
        if integer and direct_kind:
            need = _cuda.radix_temp_bytes(key_bytes, payload > 0, True, 1, n)
            assert need > 4 * per_row, (integer, n, need, per_row)


@gpu
@pytest.mark.parametrize("dtype", KEY_DTYPES + NARROW, ids=dtype_id)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_radix_matches_merge(rng, dtype, descending):
    for n in SIZES:
        # a half of random keys, a quarter of edge values, a quarter of few distinct keys
        # (ties; for floats +-0.0 and NaN among them), shuffled
        parts = [_keys(rng, dtype, n - 3 * (n // 4), "random"),
                 _keys(rng, dtype, n // 4, "special"), _keys(rng, dtype, 2 * (n // 4), "few")]
        x = rng.permutation(np.concatenate(parts))
        what = f"{dtype_id(dtype)} n={n} desc={descending}"
        keys = _same_three_ways(lambda a: jmp.sort(a, descending=descending), x,
                                what=f"sort {what}")
        if dtype not in NARROW:
            assert_bits_equal(keys, ref_jnp_sort(x, -1, descending), f"sort {what} vs ref")
        _same_three_ways(lambda a: jmp.argsort(a, descending=descending), x,
                         what=f"argsort {what}")
        values = np.arange(n, dtype=np.float32) * np.float32(0.5)
        _same_three_ways(
            lambda a, v: jmp.sort_by_key(a, v, descending=descending), x, values,
            what=f"sort_by_key {what}",
        )


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=dtype_id)
@pytest.mark.parametrize("n", [3 * TILE + 5, (SELF_TILES + 2) * TILE + 5],
                         ids=["counts-summed", "counts-scanned"])
def test_float_fixup_keeps_zeros_and_nans_in_input_order(rng, dtype, n):
    if n > SELF_TILES * TILE and dtype == np.float64:
        pytest.skip("float64 never takes the radix path: its fix-up is tested at the short size")
    # Every key a zero or a NaN (the fix-up's whole output), and then sparse ones among plain
    # keys (blocks without any write nothing): the merge sort's bits, the reference's bits; rows
    # whose finish blocks sum their row's class counts, and rows long enough to scan them first.
    bits = {
        2: [0x7E00, 0xFE00, 0x7E01, 0xFE03],
        4: [0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFF800001],
        8: [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001],
    }
    size = np.dtype(dtype).itemsize
    nans = np.array(bits[size], dtype=f"u{size}").view(dtype)
    pool = np.concatenate([nans, np.array([0.0, -0.0], dtype)])
    for x in (rng.choice(pool, n), np.where(rng.random(n) < 1e-3, rng.choice(pool, n),
                                            rng.standard_normal(n).astype(dtype))):
        for descending in (False, True):
            got = _same_three_ways(lambda a, d=descending: jmp.sort(a, descending=d), x,
                                   what=f"{dtype_id(dtype)} desc={descending}")
            assert_bits_equal(got, ref_jnp_sort(x, -1, descending), "vs reference")


def test_float32_ascending_sorts_direct():
    # float32 keys alone ascending, one row, on the radix path: the direct sort (CUB's float
    # order, then the NaN fix-up), its spares in the workspace with the fix-up's state (jmp.sort
    # descending too: the ascending sort reversed, as jnp.sort); argsort and rows keep the order
    # keys and their spare buffers.
    n = 2**22
    x = jnp.zeros((n,), jnp.float32)

    def text(fn, *args):
        return jax.export.export(jax.jit(fn), platforms=["cuda"],
                                 disabled_checks=_ffi.export_disabled_checks())(*args).mlir_module()

    direct = text(lambda a: jmp.sort(a), x)
    need = _cpu.radix_workspace_elements(4, 0, 1, n, True)
    assert "tensor<0xf32>" in direct and f"tensor<{need}xi32>" in direct, direct[:3000]
    assert "tensor<0xf32>" in text(lambda a: jmp.sort(a, descending=True), x)
    for fn, args in ((jmp.argsort, (x,)), (jmp.sort, (x.reshape(2, n // 2),)),
                     (lambda a: jmp.argsort(a, descending=True), (x,))):
        assert "tensor<0xf32>" not in text(fn, *args)
        assert "x0xf32>" not in text(fn, *args)


NAN_BITS = {  # a quiet NaN, another payload, their negatives (by dtype)
    "float32": {"+nan": 0x7FC00000, "+nan'": 0x7FC00001, "-nan": 0xFFC00000, "-nan'": 0xFF800001},
    "float16": {"+nan": 0x7E00, "+nan'": 0x7E01, "-nan": 0xFE00, "-nan'": 0xFC01},
    "bfloat16": {"+nan": 0x7FC0, "+nan'": 0x7FC1, "-nan": 0xFFC0, "-nan'": 0xFF81},
}


@gpu
@pytest.mark.parametrize("n", [SHORTEST + 1, 3 * TILE + 5, 40 * TILE + 3, 2**20 + 1,
                               (NAN_FIX_BLOCKS + 76) * TILE + 3])
@pytest.mark.parametrize("case", ["none", "+nan", "+nan +nan'", "-nan", "all -nan", "all nans",
                                  "-nan zeros", "+nan' -nan' plain"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_float_direct_moves_only_the_nans(rng, dtype, case, n):
    # CUB's float order puts negative NaNs first and orders NaNs by their bits; the fix-up
    # (radix_nan_fix.cuh) moves them last in input order, and nothing where no NaN moves (none,
    # one positive NaN pattern): every end case, rows of one tile to over a thousand (the fix-up's
    # look-back over more than a warp's 32 tiles, and blocks that loop over several tiles).
    if dtype != "float32" and n not in (3 * TILE + 5, 40 * TILE + 3):
        pytest.skip("2-byte floats: two sizes")
    dt = jnp.dtype(dtype)
    bits = NAN_BITS[dtype]
    names = case.split()
    as_keys = lambda b: np.array(b, f"u{dt.itemsize}").view(dt)  # noqa: E731
    nans = as_keys([bits[k] for k in names if k in bits])
    x = rng.standard_normal(n).astype(dt)
    if "zeros" in names:
        x = np.where(rng.random(n) < 0.1, rng.choice(np.array([0.0, -0.0], dt), n), x)
    if case.startswith("all"):
        x = rng.choice(nans if case == "all -nan" else as_keys(list(bits.values())), n)
    elif len(nans):
        x = np.where(rng.random(n) < 0.01, rng.choice(nans, n), x)
    got = _same_three_ways(jmp.sort, x, what=f"{dtype} {case} n={n}")
    assert_bits_equal(got, ref_jnp_sort(x, -1, False), f"{dtype} {case} n={n} vs reference")


@gpu
@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64],
                         ids=dtype_id)
def test_direct_radix_sort_even_rows_and_values(rng, dtype):
    # The direct sort's in-place reversal (keys alone descending) on even lengths, one of them
    # a multiple of two encode tiles (the reversal's block edge), and its pairs (values
    # ascending; descending: the order-key path), against the merge sort and the reference.
    for n in (SHORTEST + 2, 2 * TILE * 3, 2**18):
        x = random_keys(rng, dtype, (n,), "few" if n == 2**18 else "random")
        for descending in (False, True):
            what = f"{dtype_id(dtype)} n={n} desc={descending}"
            got = _same_three_ways(lambda a, d=descending: jmp.sort(a, descending=d), x,
                                   what=f"sort {what}")
            assert_bits_equal(got, ref_jnp_sort(x, -1, descending), f"sort {what} vs ref")
            values = np.arange(n, dtype=np.int32)
            _, moved = _same_three_ways(
                lambda a, v, d=descending: jmp.sort_by_key(a, v, descending=d), x, values,
                what=f"sort_by_key {what}")
            np.testing.assert_array_equal(moved, np_argsort(x, -1, descending), what)


@gpu
@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.float16, jnp.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_segmented_radix_rows(rng, dtype, descending):
    # Rows of 2-byte keys (CUB's segmented sort; integer keys alone direct, reversed a row at a
    # time descending): rows with a ragged encode tile, rows of several tiles, every row's zeros
    # and NaNs in their own ranges (the fix-up a row at a time), one row all NaN / zero and one
    # sorted, against the merge sort and the reference; argsort's positions within each row.
    for shape in [(3, SHORTEST + 1), (5, 3 * TILE - 7), (2, 2**16), (33, 2**14 + 2)]:
        rows, n = shape
        parts = [_keys(rng, dtype, n - 2 * (n // 4), "random"), _keys(rng, dtype, n // 4,
                 "special"), _keys(rng, dtype, n // 4, "few")]
        x = np.stack([rng.permutation(np.concatenate(parts)) for _ in range(rows)])
        x[0] = np.sort(x[0])
        if np.dtype(dtype).kind == "f":
            x[-1] = rng.choice(np.array([np.nan, 0.0, -0.0, -np.nan], np.float32), n).astype(dtype)
        what = f"{dtype_id(dtype)} {shape} desc={descending}"
        keys = _same_three_ways(lambda a: jmp.sort(a, descending=descending), x,
                                what=f"sort {what}")
        assert_bits_equal(keys, ref_jnp_sort(x, -1, descending), f"sort {what} vs ref")
        idx = _same_three_ways(lambda a: jmp.argsort(a, descending=descending), x,
                               what=f"argsort {what}")
        np.testing.assert_array_equal(idx, np_argsort(x, -1, descending), f"argsort {what}")
        values = rng.standard_normal(shape).astype(np.float32)
        _same_three_ways(lambda a, v: jmp.sort_by_key(a, v, descending=descending), x, values,
                         what=f"sort_by_key {what}")


def _gpu_kernel_names(fn: Callable, *args: Any) -> set[str]:
    """The names of the GPU kernels one call of fn(*args) (already compiled) runs, from a
    profiler trace: which path a sort took, where the results alone cannot tell."""
    with tempfile.TemporaryDirectory() as tmp:
        jax.profiler.start_trace(tmp)
        try:
            jax.block_until_ready(fn(*args))
        finally:
            jax.profiler.stop_trace()
        paths = glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True)
        data = jax.profiler.ProfileData.from_file(paths[0])
        return {ev.name for plane in data.planes if plane.name.startswith("/device:GPU")
                for line in plane.lines for ev in line.events}


@gpu
@pytest.mark.parametrize("dtype", [np.int16, np.float16], ids=dtype_id)
def test_segmented_radix_path_runs(rng, dtype):
    # The segmented sort declines silently (the merge sort then runs, with the same bits) when
    # its workspace falls short: the trace shows that CUB's segmented kernels ran instead, for
    # keys alone, argsort and a value, forced and as dispatched (rows of 2^14 keys).
    x = random_keys(rng, dtype, (5, 2**14), "random")
    v = np.arange(x.size, dtype=np.float32).reshape(x.shape)
    calls = {"sort": (lambda a: jmp.sort(a, descending=True), (x,)),
             "argsort": (lambda a: jmp.argsort(a), (x,)),
             "sort_by_key": (lambda a, b: jmp.sort_by_key(a, b), (x, v))}
    for method in ("radix", "auto"):
        for name, (fn, args) in calls.items():
            with _ffi.forced_sort_method(method):
                f = jax.jit(lambda *a, fn=fn: fn(*a))
                jax.block_until_ready(f(*args))
            names = _gpu_kernel_names(f, *args)
            assert any("SegmentedRadixSort" in k for k in names), (name, method, sorted(names))


@gpu
def test_radix_payload_pytree_and_lax_sort(rng):
    n = 2**16 + 3
    x = random_keys(rng, np.int32, (n,), "few")
    tree = {"a": np.arange(n, dtype=np.int64), "b": rng.standard_normal(n).astype(np.float32)}
    _same_three_ways(lambda k, t: jmp.sort_by_key(k, t), x, tree, what="pytree")
    y = random_keys(rng, np.float32, (n,), "special")
    _same_three_ways(lambda a, b: jmp.lax_sort((a, b), num_keys=1), y, x, what="lax_sort")



ONE_BYTE = [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8)]


@gpu
@pytest.mark.parametrize("dtype", ONE_BYTE, ids=dtype_id)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_counting_sort_rows_and_tiles(rng, dtype, descending):
    # One-byte keys alone (tuning/radix.h counting path): a block a row (batched rows, short rows,
    # one row of up to a tile), tiles (one row longer than a tile) and the merge sort for a few rows
    # longer than a tile (counting_shape declines); row lengths that leave every row start
    # unaligned; runs of equal keys (a word of one key), few keys, one key. One row with
    # positions or values: the counting scatter.
    shapes = [(3,), (300,), (7, 33), (257, 300), (5, 5001), (2, 70001), (2**15 + 1,),
              (3 * 2**15 - 5,), (2**20 + 3,)]
    patterns = ("random", "few", "equal", "sorted")
    for i, shape in enumerate(shapes):
        for pattern in patterns if shape in ((5, 5001), (2**15 + 1,)) else patterns[i % 4:][:1]:
            if pattern == "sorted":
                x = np.sort(random_keys(rng, dtype, shape, "random"), axis=-1)
            else:
                x = random_keys(rng, dtype, shape, pattern)
            what = f"{dtype_id(dtype)} {shape} {pattern} desc={descending}"
            got = _same_three_ways(lambda a: jmp.sort(a, descending=descending), x, what=what)
            assert_bits_equal(got, ref_jnp_sort(x, -1, descending), f"{what} vs ref")
            if len(shape) > 1:
                continue
            # one row with a payload: the counting scatter (tiles of 4096 keys, ragged last)
            idx = _same_three_ways(lambda a: jmp.argsort(a, descending=descending), x,
                                   what=f"argsort {what}")
            np.testing.assert_array_equal(idx, np_argsort(x, -1, descending), f"argsort {what}")
            values = np.arange(shape[0], dtype=np.float32) * np.float32(0.5)
            _same_three_ways(lambda a, v: jmp.sort_by_key(a, v, descending=descending), x,
                             values, what=f"sort_by_key {what}")
    # rows strided over the grid (more rows than tuning/radix.h kCountingMaxRowBlocks), and many
    # rows longer than a tile (kCountingManyRows: a block a row)
    for shape in [(2**16 + 3, 4), (128, 2**15 + 3)]:
        x = random_keys(rng, dtype, shape, "random")
        got = _run("radix", lambda a: jmp.sort(a, descending=descending), x)
        assert_bits_equal(got, ref_jnp_sort(x, -1, descending), f"rows {shape}")


@gpu
def test_counting_scatter_scans_many_tiles(rng):
    # More than 2048 tiles of 4096 keys: the scan of a bin's tile counts takes several rounds.
    x = random_keys(rng, np.uint8, (2**23 + 4097,), "random")
    idx = _same_three_ways(lambda a: jmp.argsort(a), x, what="argsort 2^23 + 4097")
    np.testing.assert_array_equal(idx, np_argsort(x, -1, False))
