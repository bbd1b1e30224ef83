# A built CUDA module loads; the CUDA lowering exists and names our FFI targets (checked on any
# machine: jax.export lowers for CUDA without a GPU), and a kernel-side failure surfaces as a
# JaxRuntimeError naming the operation instead of crashing the process.
from __future__ import annotations

import glob
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import jax_mergepath as jmp
from jax_mergepath import _ffi
from jax_mergepath._primitives import Payload, merge_p

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

TARGETS = ("jmp_merge", "jmp_co_rank", "jmp_is_sorted", "jmp_sort", "jmp_searchsorted",
           "jmp_top_k")


def test_a_built_cuda_module_loads():
    # A _cuda module built beside _cpu must import on any machine (no GPU needed): a missing
    # symbol (e.g. a kernel instance referenced but never compiled) fails here, not on a GPU.
    folder = os.path.dirname(_ffi._cpu.__file__)
    if not glob.glob(os.path.join(folder, "_cuda*")):
        pytest.skip("built without CUDA")
    assert _ffi.CUDA_IMPORT_ERROR is None


def cuda_module_text(fn, *args) -> str:
    checks = [export.DisabledSafetyCheck.custom_call(t) for t in TARGETS]
    exported = export.export(jax.jit(fn), platforms=["cuda"], disabled_checks=checks)(*args)
    return exported.mlir_module()


def custom_calls(text: str) -> list[str]:
    return re.findall(r"stablehlo\.custom_call @(\w+)", text)


@pytest.mark.parametrize(
    ("name", "fn", "target"),
    [
        ("merge", lambda a, b: jmp.merge(a, b), "jmp_merge"),
        ("merge_indices", lambda a, b: jmp.merge(a, b, return_indices=True), "jmp_merge"),
        ("merge_by_key", lambda a, b: jmp.merge_by_key(a, b, a, b), "jmp_merge"),
        ("merge_runs", lambda a, b: jmp.merge_runs(jnp.concatenate([a, b]), 7), "jmp_merge"),
        ("co_rank", lambda a, b: jmp.co_rank(jnp.arange(5), a, b), "jmp_co_rank"),
        ("is_sorted", lambda a, b: jmp.is_sorted(a), "jmp_is_sorted"),
        ("sort", lambda a, b: jmp.sort(a), "jmp_sort"),
        ("argsort", lambda a, b: jmp.argsort(a, descending=True), "jmp_sort"),
        ("sort_by_key", lambda a, b: jmp.sort_by_key(b, a[: b.shape[0]]), "jmp_sort"),
        ("lax_sort", lambda a, b: jmp.lax_sort((a, a), num_keys=2), "jmp_sort"),
        ("searchsorted", lambda a, b: jmp.searchsorted(a, b), "jmp_searchsorted"),
        ("searchsorted_sorted", lambda a, b: jmp.searchsorted(a, b, sorted_v=True),
         "jmp_searchsorted"),
        ("top_k", lambda a, b: jmp.top_k(a, 10), "jmp_top_k"),
        ("top_k_smallest", lambda a, b: jmp.top_k(a, 2000, largest=False), "jmp_top_k"),
        ("top_k_by_key", lambda a, b: jmp.top_k_by_key(a, {"b": a + 1}, 7)[1]["b"],
         "jmp_top_k"),
    ],
)
def test_cuda_lowering_names_the_target(name, fn, target):
    a = jnp.arange(10_000, dtype=jnp.int32)
    b = jnp.arange(5_000, dtype=jnp.int32)
    text = cuda_module_text(fn, a, b)
    assert custom_calls(text) == [target], name
    # typed XLA FFI: attributes travel as a dictionary, not an opaque string
    assert re.search(rf"custom_call @{target}\(.*mhlo\.backend_config = \{{", text)


def test_cuda_merge_lowering_adds_one_workspace_result():
    a = jnp.zeros((3, 100_000), jnp.float32)
    text = cuda_module_text(lambda a, b: jmp.merge(a, b), a, a)
    call = next(line for line in text.splitlines() if "custom_call @jmp_merge" in line)
    results = call.rsplit("->", 1)[1]
    assert "tensor<3x200000xf32>" in results
    # the partition workspace, one part a batch row (so batch shards carry their own)
    assert re.search(r"tensor<3x\d+xi32>", results), results


def test_vmap_lowers_to_one_cuda_call():
    a = jnp.zeros((64, 33), jnp.int32)
    text = cuda_module_text(jax.vmap(jmp.merge), a, a)
    assert custom_calls(text) == ["jmp_merge"]
    assert "while" not in text


def test_vmap_of_a_sort_lowers_one_call_with_the_batched_method():
    # The method is resolved once at lowering for the call's rows (sort_method.h): one row of
    # 2^20 int32 keys takes the direct radix sort (its spares empty), the same rows under vmap
    # the merge sort (CUB's radix sort runs one row; a batch may run on shards of any rows), and
    # rows of 2^15 int16 keys CUB's segmented sort, direct.
    M = _ffi.SortMethod

    def method_and_spares(fn, x):
        text = cuda_module_text(fn, x)
        assert custom_calls(text) == ["jmp_sort"]
        (method,) = re.findall(r"method = (\d+) : i64", text)
        empty = "x".join(str(d) for d in (*x.shape[:-1], 0))  # (spares shaped (*batch, 0))
        return int(method), f"tensor<{empty}x{x.dtype.name.replace('int', 'i')}>" in text

    row = jnp.zeros((2**20,), jnp.int32)
    assert method_and_spares(jmp.sort, row) == (M.RADIX_DIRECT, True)
    assert method_and_spares(jax.vmap(jmp.sort), jnp.zeros((8, 2**20), jnp.int32)) == (
        M.MERGE, False)
    assert method_and_spares(jax.vmap(jmp.sort), jnp.zeros((4, 2**15), jnp.int16)) == (
        M.RADIX_DIRECT, True)
    assert method_and_spares(jax.vmap(jmp.argsort), jnp.zeros((4, 2**15), jnp.int16)) == (
        M.RADIX, False)


def test_handler_rejects_inconsistent_operands_with_a_named_error():
    # Mismatched value dtypes pass abstract evaluation but the FFI handler refuses them: the
    # error must surface as JaxRuntimeError naming the operation, not crash the process.
    a = np.arange(4, dtype=np.int32)
    lengths = np.array(4, np.int32)
    with pytest.raises(jax.errors.JaxRuntimeError, match="jax_mergepath.merge"):
        jax.block_until_ready(
            merge_p.bind(
                a,
                a,
                lengths,
                lengths,
                a,
                a.astype(np.float32),
                descending=False,
                payload=int(Payload.VALUE),
                runs=False,
                full_rows=False,
            )
        )
