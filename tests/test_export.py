# jax.export of every public function: with concrete and with symbolic shapes (batch dimensions,
# vmap, grad included), serialized and deserialized, then called and compared bit for bit with
# the function called directly; a CPU + CUDA export on this machine names our FFI targets; a
# symbolic CUDA workspace has the concrete one's size; the int32 length check still runs at
# trace time wherever it can be decided.
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from tiers import core_fast

import jax_mergepath as jmp
from jax_mergepath import _ffi
from jax_mergepath._primitives import Payload

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

TARGETS = {"jmp_merge", "jmp_co_rank", "jmp_is_sorted", "jmp_sort", "jmp_searchsorted",
           "jmp_top_k", "jmp_merge_ragged"}
CHECKS = jmp.export_disabled_checks()

# Values for the dimension variables: the first also shapes the concrete export; the symbolic
# export is called with all of them (rows of one element included: symbolic dims may be 1; 9000
# keys span several sort and merge tiles).
SIZES = [
    {"b": 3, "n": 7, "m": 5, "q": 4},
    {"b": 2, "n": 9000, "m": 1, "q": 33},
    {"b": 1, "n": 1, "m": 2, "q": 1},
]


def _sorted(rng, shape, dtype=np.int32, axis=-1, descending=False, nan=False):
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        if nan:
            x[rng.random(shape) < 0.1] = np.nan
    else:
        x = rng.integers(-20, 20, shape).astype(dtype)  # many ties
    x = np.sort(x, axis=axis)  # NaN last
    return np.flip(x, axis) if descending else x


def _keys(rng, shape, dtype=np.float32):
    return _sorted(rng, shape, dtype, nan=True)[..., rng.permutation(shape[-1])]


def _runs(rng, d):
    """(b, n) rows of two sorted runs split at a per-row split, and the splits."""
    b, n = d["b"], d["n"]
    split = rng.integers(0, n + 1, b).astype(np.int32)
    x = rng.integers(-20, 20, (b, n)).astype(np.int32)
    for r in range(b):
        x[r, : split[r]] = np.sort(x[r, : split[r]])
        x[r, split[r] :] = np.sort(x[r, split[r] :])
    return x, split


def _half_sorted(rng, d):
    x = _keys(rng, (d["b"], d["n"]))
    x[::2] = np.sort(x[::2], axis=-1)
    return (x,)


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    poly: tuple  # a shape spec for each argument (jax.export.symbolic_args_specs)
    make: Callable  # (rng, sizes) -> the arguments
    targets: frozenset  # the FFI targets the lowered program calls


def _case(name, fn, poly, make, *targets):
    return Case(name, fn, tuple(poly), make, frozenset(targets))


CASES = [
    _case("merge", lambda a, b: jmp.merge(a, b, return_indices=True), ("n", "m"),
          lambda r, d: (_sorted(r, (d["n"],)), _sorted(r, (d["m"],))), "jmp_merge"),
    _case("merge_axis0_descending",
          lambda a, b: jmp.merge(a, b, axis=0, descending=True), ("n, b", "m, b"),
          lambda r, d: (_sorted(r, (d["n"], d["b"]), np.float32, 0, True, True),
                        _sorted(r, (d["m"], d["b"]), np.float32, 0, True, True)), "jmp_merge"),
    _case("merge_ragged",
          lambda a, b, la, lb: jmp.merge(a, b, a_length=la, b_length=lb, return_indices=True),
          ("b, n", "b, m", "b", "b"),
          lambda r, d: (_sorted(r, (d["b"], d["n"])), _sorted(r, (d["b"], d["m"])),
                        r.integers(0, d["n"] + 1, d["b"]).astype(np.int32),
                        r.integers(0, d["m"] + 1, d["b"]).astype(np.int32)), "jmp_merge"),
    _case("merge_int_length", lambda a, b: jmp.merge(a, b, a_length=2, b_length=10**12),
          ("b, n", "b, m"),
          lambda r, d: (_sorted(r, (d["b"], d["n"])), _sorted(r, (d["b"], d["m"]))),
          "jmp_merge"),
    _case("merge_by_key_fused", lambda ka, kb, va, vb: jmp.merge_by_key(ka, kb, va, vb),
          ("b, n", "b, m", "b, n", "b, m"),
          lambda r, d: (_sorted(r, (d["b"], d["n"])), _sorted(r, (d["b"], d["m"])),
                        r.standard_normal((d["b"], d["n"])),
                        r.standard_normal((d["b"], d["m"]))), "jmp_merge"),
    _case("merge_by_key_pytree",
          lambda ka, kb, pa, pb, ia, ib: jmp.merge_by_key(
              ka, kb, {"pos": pa, "id": ia}, {"pos": pb, "id": ib}),
          ("n", "m", "n, 3", "m, 3", "n", "m"),
          lambda r, d: (_sorted(r, (d["n"],)), _sorted(r, (d["m"],)),
                        r.standard_normal((d["n"], 3)).astype(np.float32),
                        r.standard_normal((d["m"], 3)).astype(np.float32),
                        np.arange(d["n"], dtype=np.int32),
                        np.arange(d["m"], dtype=np.int32) + 10**6), "jmp_merge"),
    _case("merge_runs", lambda x, s: jmp.merge_runs(x, s, return_indices=True), ("b, n", "b"),
          _runs, "jmp_merge"),
    _case("co_rank", lambda k, a, b: jmp.co_rank(k, a, b), ("b, q", "b, n", "b, m"),
          lambda r, d: (r.integers(-2, d["n"] + d["m"] + 3, (d["b"], d["q"])).astype(np.int32),
                        _sorted(r, (d["b"], d["n"])), _sorted(r, (d["b"], d["m"]))),
          "jmp_co_rank"),
    _case("is_sorted", lambda x: jmp.is_sorted(x), ("b, n",), _half_sorted, "jmp_is_sorted"),
    _case("sort", lambda x: jmp.sort(x), ("b, n",),
          lambda r, d: (_keys(r, (d["b"], d["n"])),), "jmp_sort"),
    _case("sort_descending_int64", lambda x: jmp.sort(x, descending=True), ("n",),
          lambda r, d: (r.integers(-(2**40), 2**40, d["n"]),), "jmp_sort"),
    _case("argsort_axis0", lambda x: jmp.argsort(x, axis=0), ("n, b",),
          lambda r, d: (_keys(r, (d["b"], d["n"])).T.copy(),), "jmp_sort"),
    _case("sort_by_key_fused", lambda k, v: jmp.sort_by_key(k, v), ("b, n", "b, n"),
          lambda r, d: (r.integers(0, 5, (d["b"], d["n"])).astype(np.int8),
                        r.standard_normal((d["b"], d["n"]))), "jmp_sort"),
    _case("sort_by_key_pytree",
          lambda k, p, i: jmp.sort_by_key(k, {"pos": p, "id": i}, descending=True),
          ("n", "n, 3", "n"),
          lambda r, d: (_keys(r, (d["n"],)), r.standard_normal((d["n"], 3)),
                        np.arange(d["n"], dtype=np.int32)), "jmp_sort"),
    _case("lax_sort_two_keys", lambda k1, k2, v: jmp.lax_sort((k1, k2, v), num_keys=2),
          ("n", "n", "n"),
          lambda r, d: (r.integers(0, 3, d["n"]).astype(np.int8), _keys(r, (d["n"],)),
                        np.arange(d["n"], dtype=np.int32)), "jmp_sort"),
    _case("lax_sort_single", lambda x: jmp.lax_sort(x), ("b, n",),
          lambda r, d: (_keys(r, (d["b"], d["n"]), np.float64),), "jmp_sort"),
    _case("searchsorted", lambda a, v: jmp.searchsorted(a, v, side="right"), ("n", "q"),
          lambda r, d: (_sorted(r, (d["n"],)), r.integers(-25, 25, d["q"]).astype(np.int32)),
          "jmp_searchsorted"),
    _case("searchsorted_sorted_v", lambda a, v: jmp.searchsorted(a, v, sorted_v=True),
          ("b, n", "b, q"),
          lambda r, d: (_sorted(r, (d["b"], d["n"]), np.float32, nan=True),
                        _sorted(r, (d["b"], d["q"]), np.float32, nan=True)),
          "jmp_searchsorted"),
    _case("vmap_merge", jax.vmap(lambda a, b: jmp.merge(a, b, return_indices=True)),
          ("b, n", "b, m"),
          lambda r, d: (_sorted(r, (d["b"], d["n"])), _sorted(r, (d["b"], d["m"]))),
          "jmp_merge"),
    _case("vmap_sort_in_axis1", jax.vmap(jmp.argsort, in_axes=1), ("n, b",),
          lambda r, d: (_keys(r, (d["n"], d["b"])),), "jmp_sort"),
    _case("vmap_searchsorted_shared_a",
          jax.vmap(lambda a, v: jmp.searchsorted(a, v, sorted_v=True), in_axes=(None, 0)),
          ("n", "b, q"),
          lambda r, d: (_sorted(r, (d["n"],)), _sorted(r, (d["b"], d["q"]))),
          "jmp_searchsorted"),
    _case("grad_sort", jax.grad(lambda x: (jmp.sort(x) * jnp.arange(x.shape[-1])).sum()),
          ("b, n",), lambda r, d: (r.standard_normal((d["b"], d["n"])),), "jmp_sort"),
    _case("top_k_rows", lambda x: jmp.top_k(x, 5), ("b, 40",),
          lambda r, d: (_keys(r, (d["b"], 40)),), "jmp_top_k"),
    _case("top_k_symbolic_axis", lambda x: jmp.top_k(x, 1, largest=False), ("b, n",),
          lambda r, d: (_keys(r, (d["b"], d["n"])),), "jmp_top_k"),
    _case("vmap_top_k_by_key",
          jax.vmap(lambda k, v: jmp.top_k_by_key(k, v, 3), in_axes=(1, 1)), ("40, b", "40, b"),
          lambda r, d: (_keys(r, (40, d["b"])), r.integers(0, 9, (40, d["b"])).astype(np.int32)),
          "jmp_top_k"),
    _case("grad_top_k", jax.grad(lambda x: (jmp.top_k(x, 4)[0] * jnp.arange(4.0)).sum()),
          ("b, 40",), lambda r, d: (r.standard_normal((d["b"], 40)),), "jmp_top_k"),
    # (the CUDA lowering takes the sort for half the row and more: both targets)
    _case("partition", lambda x: jmp.partition(x, 3), ("b, 40",),
          lambda r, d: (_keys(r, (d["b"], 40)),), "jmp_top_k", "jmp_sort"),
    _case("argpartition", lambda x: jmp.argpartition(x, 30), ("b, 40",),
          lambda r, d: (r.integers(-9, 9, (d["b"], 40)).astype(np.int32),), "jmp_top_k",
          "jmp_sort"),
]


def _assert_same(got, want, what: str) -> None:
    got_leaves, got_tree = jax.tree.flatten(got)
    want_leaves, want_tree = jax.tree.flatten(want)
    assert got_tree == want_tree, what
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (what, g.shape, w.shape)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=what)


def _roundtrip(exported: export.Exported) -> export.Exported:
    return export.deserialize(exported.serialize())


def _symbolic_specs(case: Case, args):
    return export.symbolic_args_specs(args, case.poly)


# The fast tier exports one case of each family (concrete and symbolic shapes, both platforms);
# the slow tier every case.
SYMBOLIC_CORE = {"merge_ragged", "merge_by_key_pytree", "sort_by_key_pytree", "searchsorted",
                 "vmap_merge", "grad_sort", "top_k_symbolic_axis", "partition"}


@pytest.mark.parametrize("case", core_fast(CASES, lambda c: c.name in SYMBOLIC_CORE),
                         ids=lambda c: c.name)
def test_export_concrete_shapes(case, rng):
    args = case.make(rng, SIZES[0])
    exported = _roundtrip(export.export(jax.jit(case.fn), disabled_checks=CHECKS)(*args))
    _assert_same(exported.call(*args), jax.jit(case.fn)(*args), case.name)



@pytest.mark.parametrize("case", core_fast(CASES, lambda c: c.name in SYMBOLIC_CORE),
                         ids=lambda c: c.name)
def test_export_symbolic_shapes(case, rng):
    specs = _symbolic_specs(case, case.make(rng, SIZES[0]))
    exported = _roundtrip(export.export(jax.jit(case.fn), disabled_checks=CHECKS)(*specs))
    assert any(export.is_symbolic_dim(d) for aval in exported.in_avals for d in aval.shape)
    for sizes in SIZES:
        args = case.make(rng, sizes)
        _assert_same(exported.call(*args), jax.jit(case.fn)(*args), f"{case.name} {sizes}")


def _custom_call_targets(text: str) -> set[str]:
    return set(re.findall(r"stablehlo\.custom_call @(\w+)", text)) - {"shape_assertion"}


@pytest.mark.parametrize("case", core_fast(CASES, lambda c: c.name in SYMBOLIC_CORE),
                         ids=lambda c: c.name)
def test_export_for_cpu_and_cuda_names_our_targets(case, rng):
    # jax.export lowers for CUDA without a GPU (the CUDA lowering needs no CUDA module); the
    # exported program still runs here, on its CPU lowering.
    args = case.make(rng, SIZES[0])
    exported = export.export(
        jax.jit(case.fn), platforms=["cpu", "cuda"], disabled_checks=CHECKS
    )(*_symbolic_specs(case, args))
    assert exported.platforms == ("cpu", "cuda")
    assert _custom_call_targets(exported.mlir_module()) == set(case.targets)
    _assert_same(_roundtrip(exported).call(*args), jax.jit(case.fn)(*args), case.name)


def test_cuda_export_of_a_symbolic_merge_carries_its_workspace():
    a = export.symbolic_args_specs(
        (jax.ShapeDtypeStruct((1, 1), jnp.float32),) * 2, ("b, n", "b, m")
    )
    text = export.export(jax.jit(jmp.merge), platforms=["cuda"], disabled_checks=CHECKS)(
        *a
    ).mlir_module()
    call = next(line for line in text.splitlines() if "custom_call @jmp_merge" in line)
    results = call.rsplit("->", 1)[1]
    # the merged keys, then the partition workspace shaped (rows, per row), both computed
    # from the dimension variables at run time
    assert re.search(r"\(tensor<\?x\?xf32>, tensor<\?x\?xi32>\)", results), results
    assert "indices_of_shape_operands" in call


def test_cuda_export_of_a_symbolic_sort_resolves_what_it_can():
    # The sort's method is resolved at lowering (sort_method.h): a symbolic length leaves it
    # ADAPTIVE (the launcher decides from the run-time shape; the workspace is the merge sort's
    # bound, the spares given), a symbolic count of rows of a static length is decided as for
    # any count of rows (never the direct sort: that needs the count), a concrete one may go
    # direct; the forced knobs pass through.
    M = _ffi.SortMethod

    def method(specs, shapes, dtype=jnp.int16, knob="auto"):
        args = export.symbolic_args_specs((jax.ShapeDtypeStruct(specs, dtype),), shapes)
        with _ffi.forced_sort_method(knob):
            text = export.export(
                jax.jit(lambda a: jmp.sort(a)), platforms=["cuda"], disabled_checks=CHECKS
            )(*args).mlir_module()
        call = next(line for line in text.splitlines() if "custom_call @jmp_sort" in line)
        return int(re.search(r"method = (\d+) : i64", call).group(1)), call

    got, call = method((4, 2**15), "b, n")
    assert got == M.ADAPTIVE
    assert re.search(r"tensor<\?x\?xi16>, tensor<\?x1xui8>, tensor<\?x\?xi32>", call), call
    assert method((4, 2**15), ("b, 32768",))[0] == M.RADIX  # (CUB's segmented sort, not direct)
    assert method((4, 2**15), ("4, 32768",))[0] == M.RADIX_DIRECT
    assert method((4, 1000), ("b, 1000",))[0] == M.MERGE
    assert method((2**20,), "n", jnp.float32, "radix")[0] == M.RADIX
    assert method((2**20,), "n", jnp.float32, "merge")[0] == M.MERGE


def test_export_needs_the_disabled_checks():
    a = jnp.arange(5, dtype=jnp.int32)
    with pytest.raises(ValueError, match="custom calls"):
        export.export(jax.jit(jmp.merge))(a, a)
    assert {c.is_custom_call() for c in CHECKS} == TARGETS
    assert all(isinstance(c, export.DisabledSafetyCheck) for c in CHECKS)


def test_symbolic_length_checks_run_when_decidable():
    # A length a constraint decides is 2**31 or more takes the long-axis way at trace time (x64
    # on: XLA's sort, no kernel call)...
    (n,) = export.symbolic_shape("n", constraints=("n >= 2147483648",))
    too_long = jax.ShapeDtypeStruct((n,), jnp.int8)
    exported = export.export(jax.jit(jmp.sort), disabled_checks=CHECKS)(too_long)
    assert "jmp_sort" not in exported.mlir_module()
    # ...and with x64 off the merges raise, for it and for concrete dimensions
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match="jax_enable_x64"):
            export.export(jax.jit(jmp.merge), disabled_checks=CHECKS)(
                too_long, jax.ShapeDtypeStruct((1,), jnp.int8)
            )
        with pytest.raises(ValueError, match="jax_enable_x64"):
            jax.eval_shape(jmp.merge, jax.ShapeDtypeStruct((2**31,), jnp.int8),
                           jax.ShapeDtypeStruct((1,), jnp.int8))  # fmt: skip
    # a length that may fit is left to the kernel (which checks it again at run time)
    (n,) = export.symbolic_shape("n")
    export.export(jax.jit(jmp.sort), disabled_checks=CHECKS)(jax.ShapeDtypeStruct((n,), jnp.int8))


def test_mismatched_symbolic_batch_dims_raise_at_trace_time():
    b, c, n = export.symbolic_shape("b, c, n")
    with pytest.raises(ValueError, match="batch dimensions"):
        export.export(jax.jit(jmp.merge), disabled_checks=CHECKS)(
            jax.ShapeDtypeStruct((b, n), jnp.int32), jax.ShapeDtypeStruct((c, n), jnp.int32)
        )


# The CUDA workspaces are sized per row by one formula for concrete and symbolic lengths
# (_ffi.py, tuning/workspace.h's bounds; tests/test_tuning.py checks them against the exact sizes):
# a symbolic export evaluates it at run time to what the concrete lowering computes.
@pytest.mark.parametrize(
    ("per_row", "key_bytes", "payload", "value_bytes"),
    [
        (_ffi.merge_workspace_per_row, 4, Payload.NONE, 0),
        (_ffi.merge_workspace_per_row, 8, Payload.RANKS_OF_B, 0),
        (_ffi.sort_workspace_per_row, 4, Payload.INDEX, 0),
        (_ffi.sort_workspace_per_row, 2, Payload.VALUE, 8),
    ],
)
def test_symbolic_workspace_size_is_the_concrete_one(per_row, key_bytes, payload, value_bytes):
    def workspace(x):
        return jnp.zeros(per_row(key_bytes, payload, value_bytes, x.shape[-1]), jnp.int8)

    (n,) = export.symbolic_shape("n")
    exported = export.export(jax.jit(workspace))(jax.ShapeDtypeStruct((n,), jnp.int8))
    assert export.is_symbolic_dim(exported.out_avals[0].shape[0])
    for length in (1, 2, 1407, 1408, 1409, 2304, 4353, 6913, 9000, 2**20 + 7):
        got = exported.call(np.zeros(length, np.int8)).shape[0]
        assert got == per_row(key_bytes, payload, value_bytes, length), length
