# GPU only: jmp.top_k on the GPU gives the CPU's bits (values and indices), and both give the
# numpy reference, on every strategy of tuning/topk.h (a block a row; the grid with a block over
# the candidates; the grid with the candidates' merge sort), the exact path forced (equal keys,
# few distinct keys, one-byte keys), ties, +-0.0 and NaNs, k at the edges, rows, every key
# width, smallest first, the routes (kernel, sort, XLA's top_k), partition, and a call captured
# in a CUDA graph (a jitted call run many times).
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import assert_bits_equal, random_keys
from select_checks import every_pattern, ref_top_k

import jax_mergepath as jmp
from jax_mergepath import _ffi
from jax_mergepath._select_primitive import forced_route

pytestmark = pytest.mark.requires_gpu

def _top_k(x, k, largest, route):
    with forced_route(route):  # (read when the call is traced: a fresh jit)
        return jax.jit(lambda x: jmp.top_k(x, k, largest=largest))(x)


def _both(x, k, largest=True, check_reference=True, route="auto"):
    """The GPU's and the CPU's results (bit-equal), and the reference's."""
    gpu = _top_k(jax.device_put(x, jax.devices("gpu")[0]), k, largest, route)
    cpu = _top_k(jax.device_put(x, jax.devices("cpu")[0]), k, largest, "auto")
    assert_bits_equal(gpu[1], cpu[1], "indices: GPU vs CPU")
    assert_bits_equal(gpu[0], cpu[0], "values: GPU vs CPU")
    if check_reference:
        want = ref_top_k(np.asarray(x), k, -1, largest)
        assert_bits_equal(gpu[1], want[1], "indices vs reference")
        assert_bits_equal(gpu[0], want[0], "values vs reference")


def _strategy(n, k):
    return _ffi._cpu.topk_strategy(k, n)


# (rows, row length, k): each strategy, its edges
SHAPES = [
    (1, 1, 1), (3, 2, 1), (2, 63, 63), (5, 64, 1), (7, 65, 33),  # a block a row, short rows
    (300, 512, 8), (64, 4096, 32), (4, 65536, 256), (1, 131071, 1000),  # a block a row
    (1, 1 << 17, 10), (2, 1 << 18, 1000), (1, (1 << 18) + 3, 1024),  # grid, block over candidates
    (1, 1 << 18, 1025), (3, (1 << 17) + 5, 5000), (1, 1 << 19, 100000),  # grid, merge sort
]


@pytest.mark.parametrize(("rows", "n", "k"), SHAPES, ids=lambda v: str(v))
def test_strategies_match_the_cpu(rows, n, k, rng):
    x = random_keys(rng, np.float32, (rows, n), "random")
    _both(x, k, route="kernel")  # (tiny rows and large k take the sort when not forced)
    _both(x, min(n, k + 1), largest=False, route="kernel")
    _both(x, k)


def test_shapes_cover_every_strategy():
    assert {_strategy(n, k) for _, n, k in SHAPES} == {1, 2, 3}


@pytest.mark.parametrize("pattern", ["equal", "few", "special", "sorted", "reverse"])
@pytest.mark.parametrize(("rows", "n", "k"), [(64, 4096, 32), (1, 1 << 18, 100),
                                              (1, 1 << 18, 3000), (2, 1 << 17, 1)])
def test_exact_path_and_ties(pattern, rows, n, k, rng):
    if pattern in ("sorted", "reverse"):
        x = np.sort(random_keys(rng, np.float32, (rows, n), "random"), axis=-1)
        x = x if pattern == "sorted" else x[..., ::-1].copy()
    else:
        x = random_keys(rng, np.float32, (rows, n), pattern)
    _both(x, k)
    _both(x, k, largest=False)


DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                np.uint32, np.int64, np.uint64, np.float16, np.float64)] + [
    np.dtype(jnp.bfloat16), np.dtype(jnp.float8_e4m3fn), np.dtype(jnp.float8_e4m3fnuz),
    np.dtype(jnp.int4)]
NARROW = DTYPES[-3:]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_key_width(dtype, rng):
    for rows, n, k in ((100, 1000, 10), (1, 1 << 17, 500), (1, 1 << 17, 2000)):
        if dtype in NARROW:
            x = rng.choice(every_pattern(dtype), (rows, n))
        else:
            x = random_keys(rng, dtype, (rows, n), "random")
        _both(x, k)
        _both(x, k, largest=False)


@pytest.mark.parametrize("route", ["kernel", "sort", "xla"])
def test_routes_agree_on_the_gpu(route, rng):
    x = jax.device_put(random_keys(rng, np.float32, (4, 3000), "special"), jax.devices("gpu")[0])
    with forced_route(route):
        got = jax.jit(lambda x: jmp.top_k(x, 1600))(x)
    want = ref_top_k(np.asarray(x), 1600)
    assert_bits_equal(got[1], want[1])
    assert_bits_equal(got[0], want[0])


def test_partition_matches_the_cpu(rng):
    x = random_keys(rng, np.float32, (3, 5000), "special")
    for kth in (0, 17, 2500, 4999):
        gpu = jmp.partition(jax.device_put(x, jax.devices("gpu")[0]), kth)
        cpu = jmp.partition(jax.device_put(x, jax.devices("cpu")[0]), kth)
        assert_bits_equal(gpu, cpu, f"partition kth={kth}")
        gpu_i = jmp.argpartition(jax.device_put(x, jax.devices("gpu")[0]), kth)
        cpu_i = jmp.argpartition(jax.device_put(x, jax.devices("cpu")[0]), kth)
        assert_bits_equal(gpu_i, cpu_i, f"argpartition kth={kth}")


def test_repeated_calls_of_one_program(rng):
    # XLA captures the FFI call in a CUDA graph after a few runs: the grid's state is reset by
    # its own kernels every call (no host sync, no allocation).
    x = jax.device_put(random_keys(rng, np.float32, (2, 1 << 18), "random"),
                       jax.devices("gpu")[0])
    f = jax.jit(lambda x: (jmp.top_k(x, 100), jmp.top_k(x, 2000, largest=False),
                           jmp.top_k(jnp.zeros_like(x), 50)))
    first = f(x)
    for _ in range(8):
        again = f(x)
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(again), strict=True):
        assert_bits_equal(a, b)
    assert_bits_equal(first[2][1], np.broadcast_to(np.arange(50, dtype=np.int32), (2, 50)))
