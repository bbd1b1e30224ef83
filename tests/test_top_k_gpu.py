# GPU only: jmp.top_k / partition / argpartition on the GPU give the CPU's bits (values and
# indices), and the numpy reference's, on every route and every CUDA strategy forced where it can
# run the call (JAX_MERGEPATH_TOPK_ROUTE's values: "kernel:<strategy>" for rows in registers, a
# block a row scalar and vectorized, the grid and the stream strategy with a block or the merge
# sort over their candidates; our sort of the order keys; XLA's top_k of them; tuning's choice):
# every key width (bool to 8 bytes, the float8 types, int4), both directions, NaN payloads of
# both signs, +-0.0, +-inf, subnormals and extremes, ties, all-equal rows, k at the edges, rows of
# every length class around the registers strategy's shapes, the exact paths forced, vmap (one
# call), lax.top_k's results on the GPU (where XLA:GPU keeps the bits: its bfloat16 top_k rewrites
# NaN payloads to 0x7fff / 0xffff, ours keeps them), and a call captured in a CUDA graph.
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from reference import assert_bits_equal, random_keys, special_values
from select_checks import (
    assert_values_match_lax,
    every_pattern,
    is_valid_partition,
    ref_top_k,
)

import jax_mergepath as jmp
from jax_mergepath import _ffi
from jax_mergepath._select_primitive import STRATEGIES, forced_route

pytestmark = pytest.mark.requires_gpu

KERNELS = [f"kernel:{name}" for name in STRATEGIES]
ROUTES = ["auto", *KERNELS, "sort", "xla"]


def _gpu():
    return jax.devices("gpu")[0]


def _cpu():
    return jax.devices("cpu")[0]


def _possible(route: str, k: int, n: int) -> bool:
    """Whether `route` can run rows of n keys at k (a forced strategy that cannot: a
    ValueError when lowered)."""
    if not route.startswith("kernel:") or k == 0:
        return True
    return _ffi._cpu.topk_resolve_strategy(int(STRATEGIES[route[7:]]), k, n) >= 0


def _routes(k: int, n: int, routes=ROUTES) -> list[str]:
    return [r for r in routes if _possible(r, k, n)]


def _run(fn, x, device, route="auto"):
    with forced_route(route):  # (read when the call is traced: a fresh jit)
        return jax.jit(fn)(jax.device_put(x, device))


def _top_k(x, ks, largest, device, route="auto"):
    """[(values, indices)] of top_k of x at every k of ks (one program)."""
    return _run(lambda x: [jmp.top_k(x, k, largest=largest) for k in ks], x, device, route)


def _check_top_k(x, ks, largest=True, routes=ROUTES, reference=True):
    """Every route that can run each k: the GPU's bits = the CPU's (= the reference's)."""
    n = x.shape[-1]
    cpu = _top_k(x, ks, largest, _cpu())
    wants = [ref_top_k(x, k, -1, largest) for k in ks] if reference else [None] * len(ks)
    for i, (c, want) in enumerate(zip(cpu, wants, strict=True)):
        if want is not None:
            assert_bits_equal(c[1], want[1], f"CPU indices k={ks[i]}")
            assert_bits_equal(c[0], want[0], f"CPU values k={ks[i]}")
    for route in routes:
        run = [k for k in ks if _possible(route, k, n)]
        if not run:
            continue
        gpu = _top_k(x, run, largest, _gpu(), route)
        for k, g in zip(run, gpu, strict=True):
            c = cpu[ks.index(k)]
            what = f"{route} {x.dtype} {x.shape} k={k} largest={largest}"
            assert_bits_equal(g[1], c[1], f"indices: GPU vs CPU, {what}")
            assert_bits_equal(g[0], c[0], f"values: GPU vs CPU, {what}")


def _edge_keys(rng, dtype, shape, quiet=False):
    """Keys of dtype: random with a third of them edge values (every bit pattern for 8 bits and
    fewer; else NaNs of both signs and several payloads (signaling ones too unless `quiet`),
    +-0.0, +-inf, subnormals, extremes), made in numpy: no XLA operation touches them."""
    dt = np.dtype(dtype)
    if jax.dtypes.itemsize_bits(dt) <= 8 and dt != np.bool_:
        return rng.choice(every_pattern(dt), size=shape)
    x = random_keys(rng, dt, shape, "random")
    edges = special_values(dt)
    if jnp.issubdtype(dt, jnp.floating):
        width = np.dtype(f"u{dt.itemsize}")
        info = jnp.finfo(dt)
        nan = ((1 << int(info.nexp)) - 1) << int(info.nmant)
        nan |= (1 << (int(info.nmant) - 1)) if quiet else 0
        sign = 1 << (8 * dt.itemsize - 1)
        more = np.array([nan | 1, nan | 5, sign | nan | 1, sign | nan | 7, sign, 1, sign | 1],
                        width).view(dt)
        edges = np.concatenate([edges, more])
    mask = rng.random(shape) < 1 / 3
    return np.where(mask, rng.choice(edges, size=shape), x).astype(dt)


WIDTHS = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                np.uint32, np.int64, np.uint64, np.float16, np.float32,
                                np.float64)] + [
    np.dtype(jnp.bfloat16), np.dtype(jnp.float8_e4m3fn), np.dtype(jnp.float8_e5m2),
    np.dtype(jnp.float8_e4m3fnuz), np.dtype(jnp.int4)]


@pytest.mark.parametrize("dtype", WIDTHS, ids=lambda d: d.name)
def test_every_route_and_width(dtype, rng):
    # (37 x 1000 at k 13: every strategy can run it, registers as blocks of 64)
    x = _edge_keys(rng, dtype, (37, 1000))
    _check_top_k(x, [1, 13, 500])
    _check_top_k(x, [13, 1000], largest=False)
    y = _edge_keys(rng, dtype, (3, 300))  # (a warp a row)
    _check_top_k(y, [5, 16, 300], largest=False)
    _check_top_k(y, [5, 16])


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64),
                                   np.dtype(jnp.bfloat16), np.dtype(np.int8)],
                         ids=lambda d: d.name)
def test_long_rows_every_route(dtype, rng):
    # the grid and the stream strategy, then a block (k <= 1024) or the merge sort of their
    # candidates (k past 1024), 8-byte keys sorted by index then by key
    x = _edge_keys(rng, dtype, (2, (1 << 17) + 3))
    _check_top_k(x, [10, 1024, 1500], reference=False)
    _check_top_k(x, [1, 3000], largest=False, reference=False)


# Rows of every length class of the registers strategy (a warp of 4, 8, 16 keys a lane; blocks of
# 64 to 512 threads, 16 keys a thread) and their neighbours, k up to its limits (G / 2).
LENGTHS = [1, 2, 31, 32, 33, 100, 128, 129, 256, 257, 511, 512, 513, 1000, 1024, 1025, 2047, 2048,
           4000, 4096, 4097, 8192, 8193]


@pytest.mark.parametrize("n", LENGTHS)
def test_length_classes(n, rng):
    rows = max(1, min(300, (1 << 18) // n))
    ks = sorted({k for k in (1, 8, 16, 17, 32, 100, 256, n) if k <= n})
    routes = ("auto", "kernel:regs", "kernel:block_vec", "kernel:block")
    _check_top_k(random_keys(rng, np.float32, (rows, n), "random"), ks, routes=routes)
    _check_top_k(_edge_keys(rng, np.float64, (rows, n)), ks, largest=False, routes=routes,
                 reference=False)
    _check_top_k(random_keys(rng, np.int8, (rows, n), "random"), ks[:3], routes=routes,
                 reference=False)


@pytest.mark.parametrize("pattern", ["equal", "few", "special", "sorted", "reverse"])
@pytest.mark.parametrize(("rows", "n", "k"), [(64, 4096, 32), (300, 512, 8), (1, 1 << 18, 100),
                                              (1, 1 << 18, 3000), (2, 1 << 17, 1)])
def test_exact_paths_and_ties(pattern, rows, n, k, rng):
    if pattern in ("sorted", "reverse"):
        x = np.sort(random_keys(rng, np.float32, (rows, n), "random"), axis=-1)
        x = x if pattern == "sorted" else x[..., ::-1].copy()
    else:
        x = random_keys(rng, np.float32, (rows, n), pattern)
    _check_top_k(x, [k], routes=_routes(k, n, ["auto", *KERNELS]), reference=rows * n < 1 << 18)
    _check_top_k(x, [k], largest=False, routes=_routes(k, n, ["auto", *KERNELS]),
                 reference=False)


def test_shapes_reach_every_strategy():
    strategies = {int(_ffi._cpu.topk_resolve_strategy(int(s), k, n))
                  for n, k in ((1000, 13), ((1 << 17) + 3, 1500)) for s in STRATEGIES.values()}
    assert strategies - {-1} == {1, 2, 3, 4, 5, 6, 7}
    auto = {int(_ffi._cpu.topk_strategy(k, n)) for n, k in ((512, 8), (4096, 32), (65536, 256),
                                                         (1 << 19, 10), (1 << 19, 1500))}
    assert auto == {4, 5, 6, 7}


def _lax_top_k_matches(x, k):
    """lax.top_k on the GPU against ours on the GPU: indices bit for bit, values bit for bit but
    the NaN payloads of bfloat16 (XLA:GPU's top_k rewrites them: 0x7fff / 0xffff, seen on an
    H200 with jax 0.11.2; ours keep the keys' bits, checked against the CPU and the reference)."""
    xg = jax.device_put(x, _gpu())
    ours = jax.jit(lambda x: jmp.top_k(x, k))(xg)
    theirs = jax.jit(lambda x: lax.top_k(x, k))(xg)
    assert_bits_equal(ours[1], theirs[1], f"indices vs lax.top_k {x.dtype}")
    assert_values_match_lax(ours[0], theirs[0], f"values vs lax.top_k {x.dtype}")
    want_ref = ref_top_k(x, k)
    assert_bits_equal(ours[0], want_ref[0], "values vs reference")


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.bool_, np.int8, np.uint16, np.int32,
                                                         np.uint64, np.float16, np.float32,
                                                         np.float64)]
                         + [np.dtype(jnp.bfloat16)], ids=lambda d: d.name)
def test_lax_top_k_on_the_gpu(dtype, rng):
    for shape, k in (((57,), 5), ((3, 300), 300), ((2, 4100), 33), ((1, 1 << 17), 100)):
        _lax_top_k_matches(_edge_keys(rng, dtype, shape, quiet=True), k)


PARTITION_DTYPES = [np.dtype(t) for t in (np.int8, np.int64, np.uint64, np.float16, np.float32,
                                          np.float64)] + [np.dtype(jnp.bfloat16),
                                                          np.dtype(jnp.float8_e5m2)]
PARTITION_ROUTES = ["auto", "sort", "xla", "kernel:block", "kernel:block_vec", "kernel:grid",
                    "kernel:stream"]


@pytest.mark.parametrize("dtype", PARTITION_DTYPES, ids=lambda d: d.name)
def test_partition_every_route(dtype, rng):
    # (4, 300) with NaNs of both signs and one payload, zeros, infinities: the float64 case that
    # went wrong on the GPU, at every kth class, every route; GPU = CPU, a valid partition
    x = _edge_keys(rng, dtype, (4, 300))
    n = x.shape[-1]
    kths = (0, 1, n // 3, n - 2, n - 1)
    cpu = _run(lambda x: [(jmp.partition(x, t), jmp.argpartition(x, t)) for t in kths], x,
               _cpu())
    for route in PARTITION_ROUTES:
        gpu = _run(lambda x: [(jmp.partition(x, t), jmp.argpartition(x, t)) for t in kths], x,
                   _gpu(), route)
        for kth, (gp, gi), (cp, ci) in zip(kths, gpu, cpu, strict=True):
            assert is_valid_partition(x, np.asarray(gp), kth), (route, kth)
            assert_bits_equal(gp, cp, f"partition kth={kth} {route}")
            assert_bits_equal(gi, ci, f"argpartition kth={kth} {route}")


def test_vmap_is_one_call_on_the_gpu(rng):
    x = _edge_keys(rng, np.float32, (3, 5, 700))
    g = jax.vmap(jax.vmap(lambda r: jmp.top_k(r, 9), in_axes=1, out_axes=1))
    xt = jnp.moveaxis(jnp.asarray(x), 2, 1)
    jaxpr = jax.make_jaxpr(g)(xt)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns].count("jmp_top_k") == 1
    got = jax.jit(g)(jax.device_put(xt, _gpu()))
    want = ref_top_k(x, 9)
    assert_bits_equal(jnp.moveaxis(got[1], 1, 2), want[1])
    assert_bits_equal(jnp.moveaxis(got[0], 1, 2), want[0])
    bf = _edge_keys(rng, np.dtype(jnp.bfloat16), (6, 40, 11))  # (an axis moved: bits)
    for axis in (0, 1):
        got = _run(lambda x, axis=axis: jmp.top_k(x, 4, axis=axis), bf, _gpu())
        want = ref_top_k(bf, 4, axis)
        assert_bits_equal(got[1], want[1])
        assert_bits_equal(got[0], want[0])


@pytest.mark.parametrize("route", ["auto", "kernel:grid", "kernel:stream"])
def test_repeated_calls_of_one_program(route, rng):
    # XLA captures the FFI call in a CUDA graph after a few runs: the grid's state (and the stream
    # filter's count of blocks done) is reset by its own kernels every call (no host sync, no
    # allocation).
    x = jax.device_put(random_keys(rng, np.float32, (2, 1 << 18), "random"), _gpu())
    with forced_route(route):
        f = jax.jit(lambda x: (jmp.top_k(x, 100), jmp.top_k(x, 2000, largest=False),
                               jmp.top_k(jnp.zeros_like(x), 50)))
        first = f(x)
    for _ in range(8):
        again = f(x)
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(again), strict=True):
        assert_bits_equal(a, b)
    assert_bits_equal(first[2][1], np.broadcast_to(np.arange(50, dtype=np.int32), (2, 50)))
    want = ref_top_k(np.asarray(x), 100)
    assert_bits_equal(first[0][1], want[1])


def _top_ties(rng, dtype, n: int, share: int):
    """Random keys of dtype with one in `share` the dtype's largest number (+inf of a float)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=False)
        top = info.max
    else:
        x = np.array(jnp.asarray(rng.standard_normal(n, dtype=np.float32)).astype(dtype))
        top = np.inf
    x[rng.random(n) < 1.0 / share] = top
    return x


@pytest.mark.parametrize("route", ["auto", "kernel:grid", "kernel:stream"])
@pytest.mark.parametrize("dtype,share", [
    # n / 768 ties at the top: more than the candidates' block holds (tuning/topk.h
    # kTopkBlockMaxCap), within a grid row's capacity: that block's exact path, over candidates
    # appended in no order, takes the lowest indices among the ties
    (np.dtype(jnp.bfloat16), 768), (np.dtype(np.float32), 768), (np.dtype(np.int32), 768),
    (np.dtype(np.float16), 768),
    # n / 64 ties: past the grid row's capacity, the grid's exact path
    (np.dtype(jnp.bfloat16), 64), (np.dtype(np.int16), 64),
], ids=lambda v: getattr(v, "name", str(v)))
def test_heavy_ties_at_the_top_of_long_rows(route, dtype, share, rng):
    n = 1 << 22
    x = _top_ties(rng, dtype, n, share)
    got = _run(lambda x: jmp.top_k(x, 1000), x, _gpu(), route)
    want = ref_top_k(x, 1000)
    assert_bits_equal(got[1], want[1], f"indices {route}")
    assert_bits_equal(got[0], want[0], f"values {route}")


@pytest.mark.parametrize("route", ["auto", "kernel:grid"])
@pytest.mark.parametrize(("k", "above"), [(1000, 0), (1000, 500), (10, 100)])
def test_ties_at_the_sampled_threshold(route, k, above, rng):
    # one value v repeated n / 64 times, `above` distinct keys larger, the rest smaller: the
    # sampled threshold lands on v and the candidates pass the grid row's capacity, so the
    # grid's exact path runs its probe: fewer than k keys above v settle the k-th key as v
    # (with no key above, the tie count is skipped too); k or more above (k 10, 100 above) take
    # the radix passes
    n = 1 << 22
    x = rng.uniform(-1.0, 0.5, n).astype(np.float32)
    x[rng.random(n) < 1.0 / 64] = 0.75
    x[rng.choice(n, above, replace=False)] = rng.uniform(1.0, 2.0, above).astype(np.float32)
    want = ref_top_k(x, k)
    got = _run(lambda x: jmp.top_k(x, k), x, _gpu(), route)
    assert_bits_equal(got[1], want[1], f"indices {route}")
    assert_bits_equal(got[0], want[0], f"values {route}")
    # smallest first of the negated keys: the same selection
    got = _run(lambda x: jmp.top_k(x, k, largest=False), -x, _gpu(), route)
    assert_bits_equal(got[1], want[1], f"indices {route} smallest first")
    assert_bits_equal(got[0], -want[0], f"values {route} smallest first")


@pytest.mark.parametrize("route", ["auto", "kernel:grid"])
@pytest.mark.parametrize("k", [1000, 2000])
def test_rows_of_every_exact_path_in_one_call(route, k, rng):
    # four rows of one call, each its own way through the grid (per-row state): v repeated
    # n / 64 times with no key above it (settled, the tie count skipped), 500 above (settled),
    # 3000 above (k or more: the radix passes), and distinct keys (no exact path); k 2000 orders
    # the candidates by the merge sort
    n = 1 << 20
    x = rng.uniform(-1.0, 0.5, (4, n)).astype(np.float32)
    for row, above in ((0, 0), (1, 500), (2, 3000)):
        x[row, rng.random(n) < 1.0 / 64] = 0.75
        x[row, rng.choice(n, above, replace=False)] = rng.uniform(1.0, 2.0, above)
    got = _run(lambda x: jmp.top_k(x, k), x, _gpu(), route)
    want = ref_top_k(x, k)
    assert_bits_equal(got[1], want[1], f"indices {route}")
    assert_bits_equal(got[0], want[0], f"values {route}")


@pytest.mark.parametrize("route", ["auto", "kernel:regs", "kernel:block_vec", "kernel:block"])
@pytest.mark.parametrize(("rows", "n", "k", "group"), [(64, 512, 8, 32), (16, 4096, 32, 256)])
def test_ties_below_the_keys_of_one_thread(route, rows, n, k, group, rng):
    # rows in registers (a group of `group` threads, 16 keys a thread, 4 a load): T is the k-th
    # largest of the threads' largest keys. Every key is v but 16 larger ones, all the group's
    # first thread's: T is v and more than 4 k keys are >= T, so the exact path runs; at k 8 its
    # check of T fails (16 keys above it: the bitwise search finds the k-th), at k 32 it settles
    # T as the k-th (16 above, 16 ties taken). The block strategies' samples see v too: more
    # keys >= it than their buffer, so their exact path's count of the keys above it fails at
    # k 8 (the radix select) and settles T at k 32.
    x = np.full((rows, n), 0.75, np.float32)
    first = np.array([(i // 4) * group * 4 + i % 4 for i in range(16)])
    x[:, first] = rng.uniform(1.0, 2.0, (rows, 16)).astype(np.float32)
    want = ref_top_k(x, k)
    got = _run(lambda x: jmp.top_k(x, k), x, _gpu(), route)
    assert_bits_equal(got[1], want[1], f"indices {route}")
    assert_bits_equal(got[0], want[0], f"values {route}")


def _narrow_eight_byte_keys(rng, dtype, shape):
    """8-byte keys whose high words tie, a row's keys within one of two widths: integers within
    2^20 or 2^38 of 0 (unsigned: of 2^40), floats 1e9 + normals x 100 or x 10^4 (a high word of
    1e9 spans 512 of the value), so that a row's high words span 1-2 or tens to ~200 values
    (the registers' narrow words, shifted by 0-8 bits); a few keys of one in a hundred (or
    fewer) spread over the whole range, so that some keys' high words pass the ties' and a
    row's first level buffers them before its second."""
    wide = rng.random(shape[:-1] + (1,)) < 0.5
    if dtype == np.float64:
        x = 1e9 + rng.normal(size=shape) * np.where(wide, 1e4, 100.0)
        spread = rng.normal(size=shape) * 1e12
    elif dtype == np.uint64:
        scale = np.where(wide, np.uint64(1 << 18), np.uint64(1))
        x = np.uint64(1 << 40) + rng.integers(0, 1 << 20, shape, np.uint64) * scale
        spread = rng.integers(0, np.iinfo(np.uint64).max, shape, np.uint64, endpoint=True)
    else:
        x = rng.integers(-(1 << 19), 1 << 19, shape, np.int64) * np.where(wide, 1 << 18, 1)
        spread = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, shape, np.int64)
    share = rng.choice([0.0, 0.001, 0.01], size=shape[:-1] + (1,))
    return np.where(rng.random(shape) < share, spread, x).astype(dtype)


@pytest.mark.parametrize("dtype", [np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.float64)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("n", [100, 513, 1000, 4096, 8192])
def test_eight_byte_keys_tied_in_their_high_words(dtype, n, rng):
    # the registers strategy keeps 32-bit words of 8-byte keys (high words, or a narrow row's
    # offsets shifted by 0-8 bits): rows whose words tie take the exact path on them (the keys
    # above the k-th word buffered), then a second level on the ties' shifted-out bits (its
    # threshold, or its own exact path where those tie too: rows of four values, one below three
    # larger keys); every other strategy forced on the same keys
    rows = max(8, (1 << 17) // n)
    x = _narrow_eight_byte_keys(rng, dtype, (rows, n))
    x[0] = rng.choice(x[0, :4], size=n)  # (four distinct keys, each tied whole)
    x[1] = rng.choice(x[1, :4], size=n)  # (the same below three larger keys: some settled first)
    x[1, :3] = x[1].max() + np.arange(1, 4).astype(dtype)
    ks = sorted({k for k in (1, 8, 32, 33, 100, 256) if k <= n // 2})
    routes = ("auto", "kernel:regs", "kernel:block_vec", "kernel:block")
    _check_top_k(x, ks, routes=routes)
    _check_top_k(x, ks, largest=False, routes=routes)
