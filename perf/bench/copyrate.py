"""The copy rates a run compares with: `copy_bandwidth` (the ceiling of "% copy": cudaMemcpy D2D
through CuPy on a GPU, numpy's copyto on the CPU), `jax_copy_rate` (JAX's x + 1, kernel and
user-visible) and `jax_x_plus_1` (the same kernel, timed like every case: the dispatch floor)."""

from __future__ import annotations

import statistics
import time

import jax.numpy as jnp
import numpy as np

from perf.bench.config import Cfg
from perf.bench.data import prng, random_keys
from perf.bench.timing import Variant, first_call, kernel_times, user_time
from perf.bench.trace import named_jit


def _cupy_memcpy_bps(cfg: Cfg) -> float:
    """Bytes/s (read + write) of cudaMemcpy device to device of 1 GiB, through CuPy."""
    import cupy as cp

    nbytes = 1 << 30
    src = cp.random.randint(0, 2**31 - 1, nbytes // 4, dtype=cp.int32)
    dst = cp.empty_like(src)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        cp.cuda.runtime.memcpy(dst.data.ptr, src.data.ptr, src.nbytes, 3)
    samples = []
    for _ in range(max(cfg.repeats, 10)):
        start.record()
        cp.cuda.runtime.memcpy(dst.data.ptr, src.data.ptr, src.nbytes, 3)
        stop.record()
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    del src, dst
    cp.get_default_memory_pool().free_all_blocks()
    return 2 * nbytes / statistics.median(samples)


def copy_bandwidth(cfg: Cfg) -> tuple[float, str]:
    """Bytes/s of a copy (read + write counted): cudaMemcpy D2D through CuPy on a GPU (JAX's
    x + 1 kernel time without CuPy); numpy's copyto of 256 MiB on the CPU."""
    if cfg.platform == "gpu":
        try:
            return _cupy_memcpy_bps(cfg), "cudaMemcpy D2D (CuPy), 1 GiB"
        except Exception:  # noqa: BLE001 - CuPy missing or unusable: JAX's x + 1
            k, _ = jax_copy_rate(cfg, 28)
            return k, "JAX x + 1 kernel time (CuPy unavailable), 1 GiB"
    nbytes = 1 << 28
    src = np.random.default_rng(0).integers(0, 2**31 - 1, nbytes // 4, dtype=np.int32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        samples.append(time.perf_counter() - t0)
    return 2 * nbytes / statistics.median(samples), "numpy copyto on the host, 256 MiB"


def jax_x_plus_1(cfg: Cfg, log2: int) -> Variant:
    """JAX's x + 1 on 2^log2 random int32, timed like every case (kernel and user-visible)."""
    x = random_keys(prng(log2, 99), 1 << log2, jnp.int32)
    v = Variant("x + 1", lambda a: a + 1, (x,))
    v.f, v.tag = named_jit(v.fn)
    first_call(v)
    kernel_times([v], cfg)
    user_time(v, cfg)
    return v


def jax_copy_rate(cfg: Cfg, log2: int) -> tuple[float, float]:
    """(kernel, user-visible) bytes/s of JAX's x + 1 on 2^log2 int32 (read + write)."""
    v = jax_x_plus_1(cfg, log2)
    nbytes = 2 * 4 << log2
    return nbytes / v.kernel_s, nbytes / v.user_s
