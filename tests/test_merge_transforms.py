# The merge family under JAX transforms (docs/contract.md "Transforms"): identical results under
# jax.jit (static and traced lengths/splits); jax.vmap with in_axes (0,0), (1,0), (None,0),
# (0,None), nested, and over ragged lengths / splits; a vmapped merge lowers to the same number of
# custom calls as the unbatched one and to no while loop; jax.grad / jax.jvp with respect to
# floating keys and values follow the permutation exactly (checked against take_along_axis of the
# reference permutation); vmap of grad, grad of vmap, jit of grad.
from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from merge_checks import DIR_IDS, DIRECTIONS, check_merge
from reference import (
    assert_bits_equal,
    random_keys,
    ref_co_rank,
    ref_is_sorted,
    ref_merge,
    ref_merge_by_key,
    ref_merge_runs,
    sort_segments,
    sorted_keys,
)

import jax_mergepath as jmp

pytestmark = pytest.mark.slow  # the slow tier (28 s of test time on 2 cores)

# ---------------------------------------------------------------------------------------- jit


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_jit_merge_matches_eager_and_reference(rng, descending):
    a = sorted_keys(rng, np.float32, (3, 257), "few", descending=descending)
    b = sorted_keys(rng, np.float32, (3, 130), "few", descending=descending)
    f = jax.jit(functools.partial(jmp.merge, descending=descending, return_indices=True))
    got_v, got_i = f(a, b)
    eager_v, eager_i = jmp.merge(a, b, descending=descending, return_indices=True)
    want_v, want_i = ref_merge(a, b, descending=descending)
    assert_bits_equal(got_v, want_v, "jit values")
    assert_bits_equal(got_i, want_i, "jit indices")
    assert_bits_equal(got_v, eager_v, "jit vs eager values")
    assert_bits_equal(got_i, eager_i, "jit vs eager indices")


def test_jit_ragged_traced_lengths(rng):
    a_len, b_len = rng.integers(0, 31, 5), rng.integers(0, 21, 5)
    a = sort_segments(random_keys(rng, np.int32, (5, 30)), a_len, sort_tail=False)
    b = sort_segments(random_keys(rng, np.int32, (5, 20)), b_len, sort_tail=False)
    f = jax.jit(lambda a, b, la, lb: jmp.merge(a, b, a_length=la, b_length=lb, return_indices=True))
    got_v, got_i = f(a, b, jnp.asarray(a_len, jnp.int32), jnp.asarray(b_len, jnp.int32))
    want_v, want_i = ref_merge(a, b, a_length=a_len, b_length=b_len)
    assert_bits_equal(got_v, want_v, "jit ragged values")
    assert_bits_equal(got_i, want_i, "jit ragged indices")
    # A 0-d traced length for 1-D inputs.
    g = jax.jit(lambda a, b, la, lb: jmp.merge(a, b, a_length=la, b_length=lb))
    got = g(a[1], b[1], jnp.int32(a_len[1]), jnp.int32(b_len[1]))
    assert_bits_equal(got, ref_merge(a[1], b[1], a_length=a_len[1], b_length=b_len[1])[0], "0-d")


def test_jit_rest_of_family(rng):
    a_k = sorted_keys(rng, np.float64, (4, 40), "few")
    b_k = sorted_keys(rng, np.float64, (4, 33), "few")
    a_v = {"x": rng.standard_normal((4, 40, 2)), "i": np.arange(160).reshape(4, 40)}
    b_v = {"x": rng.standard_normal((4, 33, 2)), "i": np.arange(132).reshape(4, 33)}
    got_k, got_v = jax.jit(jmp.merge_by_key)(a_k, b_k, a_v, b_v)
    want_k, want_v = ref_merge_by_key(a_k, b_k, a_v, b_v)
    assert_bits_equal(got_k, want_k, "jit merge_by_key keys")
    for g, w in zip(jax.tree.leaves(got_v), jax.tree.leaves(want_v), strict=True):
        assert_bits_equal(g, w, "jit merge_by_key values")

    split = rng.integers(0, 74, 4)
    x = sort_segments(random_keys(rng, np.uint8, (4, 73)), split)
    f = jax.jit(functools.partial(jmp.merge_runs, return_indices=True))
    got_v, got_i = f(x, jnp.asarray(split, jnp.int32))
    want_v, want_i = ref_merge_runs(x, split)
    assert_bits_equal(got_v, want_v, "jit merge_runs values")
    assert_bits_equal(got_i, want_i, "jit merge_runs indices")

    k = np.arange(74, dtype=np.int32)
    got = jax.jit(jmp.co_rank)(k, a_k[0], b_k[0])
    np.testing.assert_array_equal(np.asarray(got), ref_co_rank(k, a_k[0], b_k[0]))
    got = jax.jit(functools.partial(jmp.is_sorted, descending=True))(a_k)
    np.testing.assert_array_equal(np.asarray(got).all(), ref_is_sorted(a_k, descending=True).all())
    assert bool(jax.jit(jmp.is_sorted)(a_k[0]))


# --------------------------------------------------------------------------------------- vmap


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_vmap_in_axes_0_0(rng, descending):
    A = sorted_keys(rng, np.float32, (6, 129), "few", descending=descending)
    B = sorted_keys(rng, np.float32, (6, 127), "few", descending=descending)
    f = functools.partial(jmp.merge, descending=descending, return_indices=True)
    got_v, got_i = jax.vmap(f)(A, B)
    want_v, want_i = ref_merge(A, B, descending=descending)
    assert_bits_equal(got_v, want_v, "vmap values")
    assert_bits_equal(got_i, want_i, "vmap indices")


def test_vmap_in_axes_1_0(rng):
    A = sorted_keys(rng, np.int32, (50, 5), "few", axis=0)  # rows along axis 1
    B = sorted_keys(rng, np.int32, (5, 31), "few")
    got_v, got_i = jax.vmap(functools.partial(jmp.merge, return_indices=True), in_axes=(1, 0))(A, B)
    want_v, want_i = ref_merge(A.T, B)
    assert_bits_equal(got_v, want_v, "vmap(1,0) values")
    assert_bits_equal(got_i, want_i, "vmap(1,0) indices")
    # out_axes=1 too
    got = jax.vmap(jmp.merge, in_axes=(1, 0), out_axes=1)(A, B)
    assert_bits_equal(got, want_v.T, "vmap(1,0) out_axes=1")


@pytest.mark.parametrize("in_axes", [(None, 0), (0, None)], ids=["None-0", "0-None"])
def test_vmap_one_side_unbatched(rng, in_axes):
    a = sorted_keys(rng, np.float64, (40,), "few")
    B = sorted_keys(rng, np.float64, (4, 23), "few")
    args = (a, B) if in_axes == (None, 0) else (B, a)
    got_v, got_i = jax.vmap(functools.partial(jmp.merge, return_indices=True), in_axes=in_axes)(
        *args
    )
    bc = [np.broadcast_to(x, (4, x.shape[-1])) if x.ndim == 1 else x for x in args]
    want_v, want_i = ref_merge(*bc)
    assert_bits_equal(got_v, want_v, f"vmap{in_axes} values")
    assert_bits_equal(got_i, want_i, f"vmap{in_axes} indices")


def test_vmap_nested_and_of_batched_merge(rng):
    A = sorted_keys(rng, np.int16, (2, 3, 4, 17), "few", axis=2)  # merged axis 2
    B = sorted_keys(rng, np.int16, (2, 3, 9, 17), "few", axis=2)
    f = functools.partial(jmp.merge, axis=0, return_indices=True)
    got_v, got_i = jax.vmap(jax.vmap(jax.vmap(f, in_axes=(1, 1), out_axes=1)))(A, B)
    want_v, want_i = ref_merge(A, B, axis=2)
    assert_bits_equal(got_v, want_v, "nested vmap values")
    assert_bits_equal(got_i, want_i, "nested vmap indices")
    # vmap over a call that is itself batched (inputs with their own batch dims)
    g = functools.partial(jmp.merge, axis=-2, return_indices=True)
    got_v, got_i = jax.vmap(g)(A, B)
    assert_bits_equal(got_v, want_v, "vmap of batched merge values")
    assert_bits_equal(got_i, want_i, "vmap of batched merge indices")


def test_vmap_over_ragged_lengths(rng):
    a_len, b_len = rng.integers(0, 26, 7), rng.integers(0, 18, 7)
    A = sort_segments(random_keys(rng, np.float32, (7, 25)), a_len, sort_tail=False)
    B = sort_segments(random_keys(rng, np.float32, (7, 17)), b_len, sort_tail=False)

    def f(a, b, la, lb):
        return jmp.merge(a, b, a_length=la, b_length=lb, return_indices=True)

    got_v, got_i = jax.vmap(f)(A, B, jnp.asarray(a_len), jnp.asarray(b_len))
    want_v, want_i = ref_merge(A, B, a_length=a_len, b_length=b_len)
    assert_bits_equal(got_v, want_v, "vmap ragged values")
    assert_bits_equal(got_i, want_i, "vmap ragged indices")
    # Only the lengths batched: one pair of inputs, many valid prefixes.
    a = sorted_keys(rng, np.float32, (25,), "few")
    b = sorted_keys(rng, np.float32, (17,), "few")
    got_v, got_i = jax.vmap(f, in_axes=(None, None, 0, 0))(a, b, jnp.asarray(a_len), b_len)
    want_v, want_i = ref_merge(
        np.broadcast_to(a, (7, 25)), np.broadcast_to(b, (7, 17)), a_length=a_len, b_length=b_len
    )
    assert_bits_equal(got_v, want_v, "vmap lengths-only values")
    assert_bits_equal(got_i, want_i, "vmap lengths-only indices")


def test_vmap_rest_of_family(rng):
    A_k = sorted_keys(rng, np.float32, (5, 30), "few")
    B_k = sorted_keys(rng, np.float32, (5, 21), "few")
    A_v = (rng.standard_normal((5, 30, 3)).astype(np.float32), np.arange(150).reshape(5, 30))
    B_v = (rng.standard_normal((5, 21, 3)).astype(np.float32), np.arange(105).reshape(5, 21))
    got_k, got_v = jax.vmap(jmp.merge_by_key)(A_k, B_k, A_v, B_v)
    want_k, want_v = ref_merge_by_key(A_k, B_k, A_v, B_v)
    assert_bits_equal(got_k, want_k, "vmap merge_by_key keys")
    for g, w in zip(jax.tree.leaves(got_v), jax.tree.leaves(want_v), strict=True):
        assert_bits_equal(g, w, "vmap merge_by_key values")

    split = rng.integers(-2, 55, 6)
    X = sort_segments(random_keys(rng, np.int64, (6, 51)), split)
    got_v, got_i = jax.vmap(functools.partial(jmp.merge_runs, return_indices=True))(
        X, jnp.asarray(split)
    )
    want_v, want_i = ref_merge_runs(X, split)
    assert_bits_equal(got_v, want_v, "vmap merge_runs values")
    assert_bits_equal(got_i, want_i, "vmap merge_runs indices")
    Xs = sorted_keys(rng, np.int64, (6, 51))
    got = jax.vmap(jmp.merge_runs, in_axes=(0, None))(Xs, 20)
    assert_bits_equal(got, Xs, "vmap merge_runs split unbatched")

    K = rng.integers(0, 52, (5, 9)).astype(np.int32)
    got = jax.vmap(jmp.co_rank)(K, A_k, B_k)
    want = np.stack([ref_co_rank(K[r], A_k[r], B_k[r]) for r in range(5)])
    np.testing.assert_array_equal(np.asarray(got), want)
    got = jax.vmap(jmp.co_rank, in_axes=(0, None, None))(K, A_k[0], B_k[0])
    np.testing.assert_array_equal(np.asarray(got), ref_co_rank(K, A_k[0], B_k[0]))

    X2 = np.where(rng.random((5, 1)) < 0.5, A_k, random_keys(rng, np.float32, (5, 30)))
    got = jax.vmap(jmp.is_sorted)(X2)
    np.testing.assert_array_equal(np.asarray(got), ref_is_sorted(X2))


# ------------------------------------------------------------------------------ lowering shape


def _count_custom_calls(text: str) -> int:
    return len(re.findall(r"custom_call", text))


def _assert_no_loop(text: str) -> None:
    assert not re.search(r"\bwhile\b", text), "batched merge lowered to a while loop"


@pytest.mark.parametrize(
    ("name", "fn", "unbatched", "batched", "in_axes"),
    [
        ("merge", jmp.merge, ((64,), (33,)), ((8, 64), (8, 33)), (0, 0)),
        ("merge_1_0", jmp.merge, ((64,), (33,)), ((64, 8), (8, 33)), (1, 0)),
        ("merge_None_0", jmp.merge, ((64,), (33,)), ((64,), (8, 33)), (None, 0)),
        (
            "merge_indices",
            functools.partial(jmp.merge, return_indices=True, descending=True),
            ((64,), (33,)),
            ((8, 64), (8, 33)),
            (0, 0),
        ),
        ("merge_runs", lambda x: jmp.merge_runs(x, 40), ((97,),), ((8, 97),), 0),
    ],
)
def test_vmap_lowers_to_one_batched_call(name, fn, unbatched, batched, in_axes):
    ub = [jax.ShapeDtypeStruct(s, jnp.float32) for s in unbatched]
    bt = [jax.ShapeDtypeStruct(s, jnp.float32) for s in batched]
    text1 = jax.jit(fn).lower(*ub).as_text()
    textb = jax.jit(jax.vmap(fn, in_axes=in_axes)).lower(*bt).as_text()
    n1 = _count_custom_calls(text1)
    assert n1 >= 1, f"{name}: the unbatched call reaches no kernel"
    _assert_no_loop(textb)
    assert _count_custom_calls(textb) == n1, textb


def test_nested_vmap_and_ragged_vmap_lower_to_one_call():
    spec = jax.ShapeDtypeStruct
    text1 = jax.jit(jmp.merge).lower(spec((64,), jnp.int32), spec((33,), jnp.int32)).as_text()
    n1 = _count_custom_calls(text1)
    assert n1 >= 1
    nested = jax.jit(jax.vmap(jax.vmap(jmp.merge)))
    text = nested.lower(spec((3, 4, 64), jnp.int32), spec((3, 4, 33), jnp.int32)).as_text()
    _assert_no_loop(text)
    assert _count_custom_calls(text) == n1

    def ragged(a, b, la, lb):
        return jmp.merge(a, b, a_length=la, b_length=lb)

    text1 = (
        jax.jit(ragged)
        .lower(
            spec((64,), jnp.int32), spec((33,), jnp.int32), spec((), jnp.int32), spec((), jnp.int32)
        )
        .as_text()
    )
    textb = jax.jit(jax.vmap(ragged)).lower(
        spec((8, 64), jnp.int32), spec((8, 33), jnp.int32), spec((8,), jnp.int32),
        spec((8,), jnp.int32),
    ).as_text()  # fmt: skip
    _assert_no_loop(textb)
    assert _count_custom_calls(textb) == _count_custom_calls(text1) >= 1


@pytest.mark.parametrize(
    "fn",
    [jmp.merge, functools.partial(jmp.merge, return_indices=True), jmp.merge_by_key],
    ids=["merge", "merge_indices", "merge_by_key"],
)
def test_full_row_merges_pass_empty_lengths(fn):
    # Whole rows need no lengths: the call gets empty ones, so a vmap broadcasts nothing a row
    # (a 2^21-row vmap spent a kernel writing two lengths a row before the merge).
    spec = jax.ShapeDtypeStruct
    args = [spec((4096, 16), jnp.int32)] * (4 if fn is jmp.merge_by_key else 2)
    for text in (jax.jit(jax.vmap(fn)).lower(*args).as_text(),
                 jax.jit(fn).lower(*args).as_text()):
        calls = [line for line in text.splitlines() if "@jmp_merge(" in line]
        assert len(calls) == 1, text
        operands = re.search(r": \((.*)\) ->", calls[0]).group(1).split(", ")
        assert operands[2:4] == ["tensor<4096x0xi32>"] * 2, calls[0]


@pytest.mark.parametrize("shape", [(6,), (6, 0)], ids=["a_length_a_row", "empty"])
def test_full_row_merge_takes_empty_lengths_or_one_a_row(rng, shape):
    # Programs exported before the empty lengths pass one length a row with full_rows: the
    # handler takes those as well as empty ones, and reads neither.
    from jax_mergepath._primitives import merge_p

    a, b = sorted_keys(rng, np.int32, (6, 40)), sorted_keys(rng, np.int32, (6, 25))
    lengths = [jnp.full(shape, 40, jnp.int32), jnp.full(shape, 25, jnp.int32)]
    out = jax.jit(lambda x, y, la, lb: merge_p.bind(
        x, y, la, lb, descending=False, payload=0, runs=False, full_rows=True))(a, b, *lengths)
    assert_bits_equal(out[0], ref_merge(a, b)[0], f"full_rows with lengths {shape}")


def test_vmap_merge_by_key_lowers_to_no_loop():
    spec = jax.ShapeDtypeStruct
    args1 = [spec((64,), jnp.float32), spec((33,), jnp.float32)] * 2
    argsb = [spec((8, 64), jnp.float32), spec((8, 33), jnp.float32)] * 2
    text1 = jax.jit(jmp.merge_by_key).lower(*args1).as_text()
    textb = jax.jit(jax.vmap(jmp.merge_by_key)).lower(*argsb).as_text()
    _assert_no_loop(textb)
    assert _count_custom_calls(textb) == _count_custom_calls(text1) >= 1


# ------------------------------------------------------------------------------ differentiation


def _perm_apply(a, b, perm, axis=-1):
    """The reference merge as a differentiable function of (a, b) for a fixed permutation."""
    return jnp.take_along_axis(jnp.concatenate([a, b], axis=axis), jnp.asarray(perm), axis=axis)


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_merge_keys(rng, dtype, descending):
    a = sorted_keys(rng, dtype, (3, 70), "few", descending=descending)
    b = sorted_keys(rng, dtype, (3, 45), "few", descending=descending)
    w = rng.standard_normal((3, 115)).astype(dtype)
    _, perm = ref_merge(a, b, descending=descending)

    def f(a, b):
        return jnp.sum(w * jmp.merge(a, b, descending=descending))

    def f_ref(a, b):
        return jnp.sum(w * _perm_apply(a, b, perm))

    ga, gb = jax.grad(f, argnums=(0, 1))(a, b)
    wa, wb = jax.grad(f_ref, argnums=(0, 1))(a, b)
    assert_bits_equal(ga, wa, "grad a")
    assert_bits_equal(gb, wb, "grad b")
    ga, gb = jax.jit(jax.grad(f, argnums=(0, 1)))(a, b)
    assert_bits_equal(ga, wa, "jit(grad) a")
    assert_bits_equal(gb, wb, "jit(grad) b")


def test_grad_merge_with_indices_ragged_and_axis(rng):
    a_len = np.array([0, 12, 30])
    a = sort_segments(random_keys(rng, np.float32, (3, 30)), a_len, sort_tail=False)
    b = sorted_keys(rng, np.float32, (3, 20), "few")
    w = rng.standard_normal((3, 50)).astype(np.float32)
    _, perm = ref_merge(a, b, a_length=a_len)

    def f(a, b):
        v, _ = jmp.merge(a, b, a_length=jnp.asarray(a_len), return_indices=True)
        return jnp.sum(w * v)

    got = jax.grad(f, argnums=(0, 1))(a, b)
    want = jax.grad(lambda a, b: jnp.sum(w * _perm_apply(a, b, perm)), argnums=(0, 1))(a, b)
    for g, r in zip(got, want, strict=True):
        assert_bits_equal(g, r, "grad ragged")
    # merged axis first
    at, bt = np.ascontiguousarray(b.T), sorted_keys(rng, np.float32, (11, 3), "few", axis=0)
    _, perm0 = ref_merge(at, bt, axis=0)
    w0 = rng.standard_normal((31, 3)).astype(np.float32)
    got = jax.grad(lambda a, b: jnp.sum(w0 * jmp.merge(a, b, axis=0)), argnums=(0, 1))(at, bt)
    want = jax.grad(lambda a, b: jnp.sum(w0 * _perm_apply(a, b, perm0, axis=0)), argnums=(0, 1))(
        at, bt
    )
    for g, r in zip(got, want, strict=True):
        assert_bits_equal(g, r, "grad axis=0")


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16, np.float32, np.float64])
def test_jvp_merge(rng, dtype):
    a = sorted_keys(rng, dtype, (2, 40), "few")
    b = sorted_keys(rng, dtype, (2, 27), "few")
    ta = rng.standard_normal(a.shape).astype(dtype)
    tb = rng.standard_normal(b.shape).astype(dtype)
    want_v, perm = ref_merge(a, b)
    out, tangent = jax.jvp(jmp.merge, (a, b), (ta, tb))
    assert_bits_equal(out, want_v, "jvp primal")
    assert_bits_equal(tangent, np.asarray(_perm_apply(ta, tb, perm)), "jvp tangent")
    (out, idx), (t_out, _) = jax.jvp(
        functools.partial(jmp.merge, return_indices=True, descending=True),
        (a[:, ::-1], b[:, ::-1]),
        (ta, tb),
    )
    _, perm_d = ref_merge(a[:, ::-1], b[:, ::-1], descending=True)
    assert_bits_equal(idx, perm_d, "jvp indices")
    assert_bits_equal(t_out, np.asarray(_perm_apply(ta, tb, perm_d)), "jvp tangent desc")


def test_grad_merge_by_key_keys_and_values(rng):
    a_k = sorted_keys(rng, np.float64, (4, 25), "few")
    b_k = sorted_keys(rng, np.float64, (4, 19), "few")
    a_v = {"p": rng.standard_normal((4, 25, 3)), "q": rng.standard_normal((4, 25))}
    b_v = {"p": rng.standard_normal((4, 19, 3)), "q": rng.standard_normal((4, 19))}
    wk = rng.standard_normal((4, 44))
    wp = rng.standard_normal((4, 44, 3))
    wq = rng.standard_normal((4, 44))
    _, perm = ref_merge(a_k, b_k)
    perm3 = np.broadcast_to(perm[..., None], (4, 44, 3))

    def f(ak, bk, av, bv):
        k, v = jmp.merge_by_key(ak, bk, av, bv)
        return jnp.sum(wk * k) + jnp.sum(wp * v["p"]) + jnp.sum(wq * v["q"])

    def f_ref(ak, bk, av, bv):
        k = _perm_apply(ak, bk, perm)
        p = jnp.take_along_axis(jnp.concatenate([av["p"], bv["p"]], 1), jnp.asarray(perm3), 1)
        q = _perm_apply(av["q"], bv["q"], perm)
        return jnp.sum(wk * k) + jnp.sum(wp * p) + jnp.sum(wq * q)

    got = jax.grad(f, argnums=(0, 1, 2, 3))(a_k, b_k, a_v, b_v)
    want = jax.grad(f_ref, argnums=(0, 1, 2, 3))(a_k, b_k, a_v, b_v)
    for g, r in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert_bits_equal(g, r, "grad merge_by_key")


def test_grad_values_with_integer_keys(rng):
    a_k = sorted_keys(rng, np.int32, (60,), "few")
    b_k = sorted_keys(rng, np.int32, (31,), "few")
    a_v = rng.standard_normal(60).astype(np.float32)
    b_v = rng.standard_normal(31).astype(np.float32)
    w = rng.standard_normal(91).astype(np.float32)
    _, perm = ref_merge(a_k, b_k)

    def f(av, bv):
        return jnp.sum(w * jmp.merge_by_key(a_k, b_k, av, bv)[1])

    got = jax.grad(f, argnums=(0, 1))(a_v, b_v)
    want = jax.grad(lambda av, bv: jnp.sum(w * _perm_apply(av, bv, perm)), argnums=(0, 1))(a_v, b_v)
    for g, r in zip(got, want, strict=True):
        assert_bits_equal(g, r, "grad values, int keys")
    (_, v), (_, tv) = jax.jvp(
        lambda av, bv: jmp.merge_by_key(a_k, b_k, av, bv), (a_v, b_v), (2 * a_v, 3 * b_v)
    )
    assert_bits_equal(tv, np.asarray(_perm_apply(2 * a_v, 3 * b_v, perm)), "jvp values")


def test_grad_merge_runs(rng):
    split = np.array([0, 17, 40, 33])
    x = sort_segments(random_keys(rng, np.float32, (4, 40), "few"), split)
    w = rng.standard_normal((4, 40)).astype(np.float32)
    _, perm = ref_merge_runs(x, split)

    def f(x):
        return jnp.sum(w * jmp.merge_runs(x, jnp.asarray(split)))

    got = jax.grad(f)(x)
    want = jax.grad(lambda x: jnp.sum(w * jnp.take_along_axis(x, jnp.asarray(perm), -1)))(x)
    assert_bits_equal(got, want, "grad merge_runs")


def test_vmap_of_grad_and_grad_of_vmap(rng):
    A = sorted_keys(rng, np.float32, (5, 33), "few")
    B = sorted_keys(rng, np.float32, (5, 18), "few")
    W = rng.standard_normal((5, 51)).astype(np.float32)
    _, perm = ref_merge(A, B)

    def row_loss(a, b, w):
        return jnp.sum(w * jmp.merge(a, b))

    def ref_loss(a, b):
        return jnp.sum(W * _perm_apply(a, b, perm))

    want = jax.grad(ref_loss, argnums=(0, 1))(A, B)
    got = jax.vmap(jax.grad(row_loss, argnums=(0, 1)))(A, B, W)
    for g, r in zip(got, want, strict=True):
        assert_bits_equal(g, r, "vmap(grad)")
    got = jax.grad(lambda a, b: jnp.sum(jax.vmap(row_loss)(a, b, W)), argnums=(0, 1))(A, B)
    for g, r in zip(got, want, strict=True):
        assert_bits_equal(g, r, "grad(vmap)")
    got = jax.jit(jax.vmap(jax.grad(row_loss, argnums=(0, 1))))(A, B, W)
    for g, r in zip(got, want, strict=True):
        assert_bits_equal(g, r, "jit(vmap(grad))")


def test_merge_with_zero_size_side_under_transforms(rng):
    a = sorted_keys(rng, np.float32, (3, 0))
    b = sorted_keys(rng, np.float32, (3, 9))
    check_merge(a, b)
    got = jax.jit(jax.vmap(jmp.merge))(a, b)
    assert_bits_equal(got, b, "vmap with empty a")
    g = jax.grad(lambda b: jnp.sum(jnp.arange(27.0).reshape(3, 9) * jmp.merge(a, b)))(b)
    np.testing.assert_array_equal(np.asarray(g), np.arange(27.0).reshape(3, 9))
