# The sort family under JAX transforms (docs/contract.md "Transforms"): jax.jit gives the eager
# result; jax.vmap with in_axes 0 and 1, out_axes, nested vmap, and sort_by_key with batched keys
# and unbatched values; a vmapped sort lowers to exactly one custom call and no while loop (and
# vmapped argsort / sort_by_key / lax_sort / searchsorted to as many custom calls as the unbatched
# call, no loop); jax.grad / jax.jvp follow the permutation: sort's gradient equals jnp.sort's on
# data without ties, sort_by_key differentiates through float keys and payloads, argsort (int
# output) composes with differentiation, lax_sort differentiates like jax.lax.sort.
from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from merge_checks import DIR_IDS, DIRECTIONS
from reference import (
    assert_bits_equal,
    canonical_nans,
    np_argsort,
    random_keys,
    ref_jnp_sort,
    ref_sort,
)
from sort_checks import (
    assert_tree_bits_equal,
    distinct_floats,
    lex_argsort,
    ref_lax_sort,
    ref_searchsorted,
    ref_sort_by_key,
    sorted_queries,
    take_by_perm,
)

import jax_mergepath as jmp

pytestmark = pytest.mark.slow  # the slow tier (21 s of test time on 2 cores)

# ---------------------------------------------------------------------------------------- jit


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_jit_sort_argsort(rng, descending):
    x = random_keys(rng, np.float32, (3, 2001), "special")
    f = jax.jit(functools.partial(jmp.sort, descending=descending))
    g = jax.jit(functools.partial(jmp.argsort, descending=descending))
    assert_bits_equal(f(x), ref_jnp_sort(x, -1, descending), "jit sort")
    assert_bits_equal(g(x), np_argsort(x, -1, descending), "jit argsort")
    assert_bits_equal(f(x), jmp.sort(x, descending=descending), "jit vs eager")
    h = jax.jit(functools.partial(jmp.sort, axis=0, descending=descending))
    assert_bits_equal(h(x.T), ref_jnp_sort(x.T, 0, descending), "jit sort axis=0")


def test_jit_sort_by_key_and_composition(rng):
    keys = random_keys(rng, np.float64, (4, 300), "few")
    vals = {"x": rng.standard_normal((4, 300, 2)), "i": np.arange(1200).reshape(4, 300)}
    got_k, got_v = jax.jit(jmp.sort_by_key)(keys, vals)
    want_k, want_v = ref_sort_by_key(keys, vals)
    assert_bits_equal(got_k, want_k, "jit sort_by_key keys")
    assert_tree_bits_equal(got_v, want_v, "jit sort_by_key values")

    @jax.jit
    def composed(x):  # sort inside a larger program, with other ops around it
        y = jmp.sort(x * 2.0 + 1.0)
        return y, jmp.argsort(-x), jnp.sum(y)

    x = random_keys(rng, np.float32, (1000,))
    y, idx, s = composed(x)
    with np.errstate(over="ignore"):  # float32 max * 2 -> inf, as in XLA
        want = ref_sort(x * np.float32(2.0) + np.float32(1.0))
    # NaN bits: a GPU's x * 2 + 1 gives 0x7fffffff where numpy keeps the payload
    assert_bits_equal(canonical_nans(y), canonical_nans(want), "composed sort")
    assert_bits_equal(idx, np_argsort(-x), "composed argsort")


# --------------------------------------------------------------------------------------- vmap


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_vmap_sort_in_axes(rng, descending):
    X = random_keys(rng, np.int32, (6, 257), "few")
    f = functools.partial(jmp.sort, descending=descending)
    g = functools.partial(jmp.argsort, descending=descending)
    assert_bits_equal(jax.vmap(f)(X), ref_sort(X, -1, descending), "vmap 0")
    assert_bits_equal(jax.vmap(g)(X), np_argsort(X, -1, descending), "vmap argsort 0")
    Xt = np.ascontiguousarray(X.T)  # (257, 6): examples along axis 1
    got = jax.vmap(f, in_axes=1)(Xt)
    assert_bits_equal(got, ref_sort(X, -1, descending), "vmap in_axes=1")
    got = jax.vmap(g, in_axes=1, out_axes=1)(Xt)
    assert_bits_equal(got, np_argsort(X, -1, descending).T, "vmap in_axes=1 out_axes=1")
    # the per-example call sorts along its axis 0 of a 2-D example
    Y = random_keys(rng, np.float32, (5, 40, 3), "special")
    got = jax.vmap(functools.partial(jmp.sort, axis=0, descending=descending))(Y)
    assert_bits_equal(got, ref_jnp_sort(Y, 1, descending), "vmap of axis=0 sort")


def test_vmap_nested(rng):
    X = random_keys(rng, np.float64, (2, 3, 4, 50), "few")
    got = jax.vmap(jax.vmap(jax.vmap(jmp.sort)))(X)
    assert_bits_equal(got, ref_sort(X), "nested vmap sort")
    got = jax.vmap(jax.vmap(jmp.argsort, in_axes=1), in_axes=0)(np.moveaxis(X, 1, 2))
    # outer vmap over the 2, inner over the 3 (axis 1 of each (4, 3, 50) example): out (2, 3, 4, 50)
    assert_bits_equal(got, np_argsort(X), "nested vmap argsort")
    # vmap of a call that is itself batched
    got = jax.vmap(functools.partial(jmp.sort, axis=-2))(np.swapaxes(X, -1, -2))
    assert_bits_equal(got, np.swapaxes(ref_sort(X), -1, -2), "vmap of batched sort")


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_vmap_sort_by_key(rng, descending):
    K = random_keys(rng, np.float32, (5, 90), "few")
    V = (rng.standard_normal((5, 90, 3)).astype(np.float32), np.arange(450).reshape(5, 90))
    f = functools.partial(jmp.sort_by_key, descending=descending)
    got_k, got_v = jax.vmap(f)(K, V)
    want_k, want_v = ref_sort_by_key(K, V, descending=descending)
    assert_bits_equal(got_k, want_k, "vmap sort_by_key keys")
    assert_tree_bits_equal(got_v, want_v, "vmap sort_by_key values")
    # batched keys, unbatched values: every row moves the same values by its own permutation
    v = {"p": rng.standard_normal((90, 2)), "id": np.arange(90, dtype=np.int32)}
    got_k, got_v = jax.vmap(f, in_axes=(0, None))(K, v)
    vb = jax.tree.map(lambda a: np.broadcast_to(a, (5, *a.shape)), v)
    want_k, want_v = ref_sort_by_key(K, vb, descending=descending)
    assert_bits_equal(got_k, want_k, "vmap (0, None) keys")
    assert_tree_bits_equal(got_v, want_v, "vmap (0, None) values")
    # unbatched keys, batched values
    got_k, got_v = jax.vmap(f, in_axes=(None, 0))(K[0], V[0])
    want_k, want_v = ref_sort_by_key(np.broadcast_to(K[0], (5, 90)), V[0], descending=descending)
    assert_bits_equal(got_k, want_k, "vmap (None, 0) keys")
    assert_bits_equal(got_v, want_v, "vmap (None, 0) values")
    # keys along in_axes=1, values along 0
    got_k, got_v = jax.vmap(f, in_axes=(1, 0))(np.ascontiguousarray(K.T), V[1])
    want_k, want_v = ref_sort_by_key(K, V[1], descending=descending)
    assert_bits_equal(got_k, want_k, "vmap (1, 0) keys")
    assert_bits_equal(got_v, want_v, "vmap (1, 0) values")


def test_vmap_lax_sort_and_searchsorted(rng):
    A = random_keys(rng, np.int16, (4, 77), "few")
    B = rng.standard_normal((4, 77)).astype(np.float32)
    got = jax.vmap(lambda a, b: jmp.lax_sort((a, b), num_keys=1))(A, B)
    want = ref_lax_sort((A, B), -1, 1)
    for g, w in zip(got, want, strict=True):
        assert_bits_equal(g, w, "vmap lax_sort")
    got = jax.vmap(lambda a, b: jmp.lax_sort((a, b), num_keys=2), in_axes=(0, None))(A, B[0])
    want = ref_lax_sort((A, np.broadcast_to(B[0], A.shape)), -1, 2)
    for g, w in zip(got, want, strict=True):
        assert_bits_equal(g, w, "vmap lax_sort (0, None)")

    a = ref_sort(random_keys(rng, np.float32, (3, 64), "few"))
    v = random_keys(rng, np.float32, (3, 5, 7), "few")
    for side in ("left", "right"):
        f = functools.partial(jmp.searchsorted, side=side)
        assert_bits_equal(jax.vmap(f)(a, v), ref_searchsorted(a, v, side), "vmap ss (0, 0)")
        got = jax.vmap(f, in_axes=(None, 0))(a[1], v)
        assert_bits_equal(got, ref_searchsorted(a[1], v, side), "vmap ss (None, 0)")
        got = jax.vmap(f, in_axes=(0, None))(a, v[0])
        want = ref_searchsorted(a, np.broadcast_to(v[0], (3, 5, 7)), side)
        assert_bits_equal(got, want, "vmap ss (0, None)")
        vs = sorted_queries(v, 1)
        g = functools.partial(jmp.searchsorted, side=side, sorted_v=True)
        assert_bits_equal(jax.vmap(g)(a, vs), ref_searchsorted(a, vs, side), "vmap sorted_v")
        h = jax.jit(jax.vmap(g, in_axes=(0, 1), out_axes=1))
        got = h(a, np.ascontiguousarray(np.moveaxis(vs, 0, 1)))
        want = np.moveaxis(ref_searchsorted(a, vs, side), 0, 1)
        assert_bits_equal(got, want, "jit vmap sorted_v in_axes 1")


# ------------------------------------------------------------------------------ lowering shape


def _count_custom_calls(text: str) -> int:
    return len(re.findall(r"custom_call", text))


def _assert_no_loop(text: str) -> None:
    assert not re.search(r"\bwhile\b", text), "batched sort lowered to a while loop"


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.int64], ids=["float32", "int64"])
def test_vmap_sort_lowers_to_one_custom_call(dtype):
    x = jax.ShapeDtypeStruct((8, 1000), dtype)
    text = jax.jit(jax.vmap(jmp.sort)).lower(x).as_text()
    _assert_no_loop(text)
    assert _count_custom_calls(text) == 1, text
    text = jax.jit(jax.vmap(jax.vmap(jmp.sort))).lower(jax.ShapeDtypeStruct((2, 4, 99), dtype))
    assert _count_custom_calls(text.as_text()) == 1


spec = jax.ShapeDtypeStruct


@pytest.mark.parametrize(
    ("name", "fn", "unbatched", "batched", "in_axes"),
    [
        ("argsort", jmp.argsort, [spec((100,), jnp.float32)], [spec((8, 100), jnp.float32)], 0),
        ("argsort_desc_in1", functools.partial(jmp.argsort, descending=True),
         [spec((100,), jnp.int32)], [spec((100, 8), jnp.int32)], 1),
        ("sort_by_key", jmp.sort_by_key, [spec((100,), jnp.float32), spec((100, 3), jnp.float32)],
         [spec((8, 100), jnp.float32), spec((8, 100, 3), jnp.float32)], 0),
        ("sort_by_key_None", jmp.sort_by_key,
         [spec((100,), jnp.float32), spec((100,), jnp.int32)],
         [spec((8, 100), jnp.float32), spec((100,), jnp.int32)], (0, None)),
        ("lax_sort", lambda a, b: jmp.lax_sort((a, b), num_keys=2),
         [spec((100,), jnp.int8), spec((100,), jnp.float32)],
         [spec((8, 100), jnp.int8), spec((8, 100), jnp.float32)], 0),
        ("searchsorted", jmp.searchsorted, [spec((100,), jnp.float32), spec((30,), jnp.float32)],
         [spec((8, 100), jnp.float32), spec((8, 30), jnp.float32)], 0),
        ("searchsorted_sorted_v", functools.partial(jmp.searchsorted, sorted_v=True),
         [spec((100,), jnp.float32), spec((30,), jnp.float32)],
         [spec((8, 100), jnp.float32), spec((8, 30), jnp.float32)], 0),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)  # fmt: skip
def test_vmap_lowers_to_batched_calls(name, fn, unbatched, batched, in_axes):
    text1 = jax.jit(fn).lower(*unbatched).as_text()
    textb = jax.jit(jax.vmap(fn, in_axes=in_axes)).lower(*batched).as_text()
    n1 = _count_custom_calls(text1)
    assert n1 >= 1, f"{name}: the unbatched call reaches no kernel"
    _assert_no_loop(textb)
    assert _count_custom_calls(textb) == n1, textb


# ------------------------------------------------------------------------------ differentiation


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_grad_sort_matches_jnp_sort(rng, dtype, descending):
    x = distinct_floats(rng, dtype, (3, 700))
    w = rng.standard_normal((3, 700)).astype(dtype)

    def loss(x):
        return (jmp.sort(x, descending=descending) * w).sum()

    def loss_ref(x):
        return (jnp.sort(x, descending=descending) * w).sum()

    want = jax.grad(loss_ref)(x)
    assert_bits_equal(jax.grad(loss)(x), want, "grad sort")
    assert_bits_equal(jax.jit(jax.grad(loss))(x), want, "jit(grad) sort")
    # axis 0 and 1-D
    x0 = distinct_floats(rng, dtype, (500, 2))
    w0 = rng.standard_normal((500, 2)).astype(dtype)
    got = jax.grad(lambda x: (jmp.sort(x, axis=0, descending=descending) * w0).sum())(x0)
    want = jax.grad(lambda x: (jnp.sort(x, axis=0, descending=descending) * w0).sum())(x0)
    assert_bits_equal(got, want, "grad sort axis=0")


def _jnp_sort_perm(x, descending: bool) -> np.ndarray:
    """The permutation jnp.sort applies along the last axis: the stable ascending one, reversed
    when descending."""
    up = np_argsort(x, -1, False)
    return np.flip(up, -1) if descending else up


def test_grad_sort_with_ties_follows_the_stable_permutation(rng):
    """With ties the gradient goes to the element the stable order put at each position
    (descending: the ascending order reversed, as jnp.sort)."""
    x = random_keys(rng, np.float32, (2, 400), "few")
    x = np.where(np.isnan(x), np.float32(3.0), x)
    w = rng.standard_normal((2, 400)).astype(np.float32)
    for descending in DIRECTIONS:
        perm = _jnp_sort_perm(x, descending)
        got = jax.grad(lambda x, d=descending: (jmp.sort(x, descending=d) * w).sum())(x)
        want = jax.grad(lambda x, p=perm: (jnp.take_along_axis(x, p, -1) * w).sum())(x)
        assert_bits_equal(got, want, f"grad with ties desc={descending}")


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16, np.float32, np.float64],
                         ids=["float16", "bfloat16", "float32", "float64"])  # fmt: skip
def test_jvp_sort(rng, dtype):
    x = random_keys(rng, dtype, (2, 300), "few")
    t = rng.standard_normal(x.shape).astype(dtype)
    for descending in DIRECTIONS:
        perm = _jnp_sort_perm(x, descending)
        out, tangent = jax.jvp(functools.partial(jmp.sort, descending=descending), (x,), (t,))
        assert_bits_equal(out, np.take_along_axis(x, perm, -1), "jvp primal")
        assert_bits_equal(tangent, np.take_along_axis(t, perm, -1), "jvp tangent")


def test_argsort_under_differentiation(rng):
    """argsort returns int32: it composes with grad (through the gather it drives) and jvp."""
    x = distinct_floats(rng, np.float32, (600,))
    w = rng.standard_normal(600).astype(np.float32)

    def loss(x):
        return (x[jmp.argsort(x)] * w).sum()

    want = jax.grad(lambda x: (jnp.sort(x) * w).sum())(x)
    assert_bits_equal(jax.grad(loss)(x), want, "grad through argsort gather")
    idx, t_idx = jax.jvp(jmp.argsort, (x,), (np.ones_like(x),))
    assert_bits_equal(idx, np_argsort(x), "jvp argsort primal")
    assert t_idx.dtype == jax.dtypes.float0, t_idx.dtype
    g = jax.grad(lambda x: jnp.sum(jmp.argsort(x).astype(jnp.float32) * x))(x)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(np_argsort(x), np.float32))


@pytest.mark.parametrize("descending", DIRECTIONS, ids=DIR_IDS)
def test_grad_sort_by_key(rng, descending):
    keys = random_keys(rng, np.float64, (3, 250), "few")
    keys = np.where(np.isnan(keys), 5.0, keys)
    vals = {"p": rng.standard_normal((3, 250, 3)), "q": rng.standard_normal((3, 250)).astype(
        np.float32), "id": np.arange(750).reshape(3, 250)}  # fmt: skip
    wk = rng.standard_normal((3, 250))
    wp = rng.standard_normal((3, 250, 3))
    wq = rng.standard_normal((3, 250)).astype(np.float32)
    perm = jnp.asarray(np_argsort(keys, -1, descending))

    def loss(k, v):
        k, v = jmp.sort_by_key(k, v, descending=descending)
        return (wk * k).sum() + (wp * v["p"]).sum() + (wq * v["q"]).sum().astype(jnp.float64)

    def loss_ref(k, v):
        k = jnp.take_along_axis(k, perm, -1)
        p = jnp.take_along_axis(v["p"], perm[..., None], 1)
        q = jnp.take_along_axis(v["q"], perm, -1)
        return (wk * k).sum() + (wp * p).sum() + (wq * q).sum().astype(jnp.float64)

    vf = {"p": vals["p"], "q": vals["q"]}

    def with_ids(k, v):
        return loss(k, {**v, "id": vals["id"]})

    def with_ids_ref(k, v):
        return loss_ref(k, {**v, "id": vals["id"]})

    got = jax.grad(with_ids, argnums=(0, 1))(keys, vf)
    want = jax.grad(with_ids_ref, argnums=(0, 1))(keys, vf)
    assert_tree_bits_equal(got, want, "grad sort_by_key")
    # integer keys: gradient only through the float payload
    ik = random_keys(rng, np.int32, (250,), "few")
    pv = rng.standard_normal(250).astype(np.float32)
    w = rng.standard_normal(250).astype(np.float32)
    p1 = np_argsort(ik, -1, descending)
    got = jax.grad(lambda v: (w * jmp.sort_by_key(ik, v, descending=descending)[1]).sum())(pv)
    want = jax.grad(lambda v: (w * jnp.take(v, p1)).sum())(pv)
    assert_bits_equal(got, want, "grad sort_by_key int keys")
    _, tv = jax.jvp(lambda v: jmp.sort_by_key(ik, v, descending=descending)[1], (pv,), (2 * pv,))
    assert_bits_equal(tv, take_by_perm(2 * pv, p1, -1), "jvp sort_by_key values")


def test_grad_lax_sort(rng):
    k = random_keys(rng, np.int8, (300,), "few")
    f = distinct_floats(rng, np.float32, (300,))
    v = rng.standard_normal(300).astype(np.float32)
    w1, w2 = rng.standard_normal((2, 300)).astype(np.float32)
    perm = jnp.asarray(lex_argsort((k, f)))

    def loss(f, v):
        _, fs, vs = jmp.lax_sort((k, f, v), num_keys=2)
        return (w1 * fs).sum() + (w2 * vs).sum()

    def loss_ref(f, v):
        return (w1 * f[perm]).sum() + (w2 * v[perm]).sum()

    got = jax.grad(loss, argnums=(0, 1))(f, v)
    want = jax.grad(loss_ref, argnums=(0, 1))(f, v)
    assert_tree_bits_equal(got, want, "grad lax_sort")
    # the same as jax.lax.sort's own gradient (no subnormals, no ties in the float key)
    want_lax = jax.grad(
        lambda f, v: (w1 * jax.lax.sort((k, f, v), num_keys=2)[1]).sum()
        + (w2 * jax.lax.sort((k, f, v), num_keys=2)[2]).sum(),
        argnums=(0, 1),
    )(f, v)
    assert_tree_bits_equal(got, want_lax, "grad lax_sort vs jax.lax.sort")


def test_vmap_of_grad_and_grad_of_vmap(rng):
    X = distinct_floats(rng, np.float32, (5, 120))
    W = rng.standard_normal((5, 120)).astype(np.float32)

    def row_loss(x, w):
        return (jmp.sort(x) * w).sum()

    want = jax.grad(lambda x: (jnp.sort(x) * W).sum())(X)
    assert_bits_equal(jax.vmap(jax.grad(row_loss))(X, W), want, "vmap(grad)")
    got = jax.grad(lambda x: jax.vmap(row_loss)(x, W).sum())(X)
    assert_bits_equal(got, want, "grad(vmap)")
    assert_bits_equal(jax.jit(jax.vmap(jax.grad(row_loss)))(X, W), want, "jit(vmap(grad))")
