"""Benchmark of jax_mergepath's merges against what JAX users write today.

    python -m jax_mergepath.bench [--quick] [--max-log2 28] [--repeats 15] [--breakdown]

For every case it first checks the result against the baselines, then times DEVICE work, the
same way for every variant: on a GPU, the kernel durations of a profiler trace of `repeats` warm
calls (launch gaps and host work excluded), divided by the calls; on the CPU, the wall time per
call of a jitted chain of dependent calls (difference of 12- and 2-call chains).
Bandwidth counts inputs read once and outputs written once; "% copy" compares with a
device-to-device copy timed in the same run (cudaMemcpy through CuPy when available, else JAX's
`x + 1` - the table says which).

Baselines: `jnp.sort(jnp.concatenate([a, b]))` (and `lax.sort` of keys + values for key-value),
and a searchsorted + scatter merge.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import tempfile
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jax_mergepath as jmp


def _chain(fn: Callable, k: int) -> Callable:
    """jit of k dependent calls of fn(*args). Each call's first input gets its element 0
    replaced by min(itself, the previous call's first output element): a real data dependency
    (XLA cannot merge or hoist the calls) that keeps sorted inputs sorted and costs one element.
    """

    def run(*args):
        acc = jnp.zeros((), jnp.float32)
        for _ in range(k):
            out = jax.tree.leaves(fn(*args))[0].reshape(-1)
            first = args[0]
            args = (first.at[0].set(jnp.minimum(first[0], out[0])), *args[1:])
            acc = acc + out[-1].astype(jnp.float32)
        return acc

    return jax.jit(run)


def _gpu_kernel_times(fn: Callable, args: tuple, repeats: int) -> dict[str, float] | None:
    """Total device time per kernel name (ns) over `repeats` calls, from a profiler trace of the
    GPU's stream lines; None when there is no GPU plane (CPU runs)."""
    f = jax.jit(fn)
    with tempfile.TemporaryDirectory() as tmp:
        jax.profiler.start_trace(tmp)
        for _ in range(repeats):
            jax.block_until_ready(f(*args))
        jax.profiler.stop_trace()
        paths = glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True)
        if not paths:
            return None
        data = jax.profiler.ProfileData.from_file(paths[0])
    plane = data.find_plane_with_name("/device:GPU:0")
    if plane is None:
        return None
    per_kernel: dict[str, float] = {}
    for line in plane.lines:
        if not line.name.startswith("Stream"):
            continue
        for event in line.events:
            per_kernel[event.name] = per_kernel.get(event.name, 0.0) + event.duration_ns
    return per_kernel


def device_time(fn: Callable, args: tuple, repeats: int, breakdown: bool = False) -> float:
    """Seconds of device time per call of fn(*args), after two warm-up calls.

    On a GPU: the sum of the kernel durations a profiler trace records, divided by the calls.
    On the CPU: wall time per call of a chain of dependent calls (see _chain), K2 minus K1."""
    f = jax.jit(fn)
    jax.block_until_ready(f(*args))
    jax.block_until_ready(f(*args))
    if jax.devices()[0].platform == "gpu":
        kernels = _gpu_kernel_times(fn, args, repeats)
        if kernels:
            if breakdown:
                for name, ns in sorted(kernels.items(), key=lambda kv: -kv[1]):
                    print(f"    {ns / repeats / 1e3:9.1f} us  {name[:90]}")
            return sum(kernels.values()) / repeats / 1e9
    times = {}
    for k in (2, 12):
        chain = _chain(fn, k)
        jax.block_until_ready(chain(*args))
        samples = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(chain(*args))
            samples.append(time.perf_counter() - t0)
        times[k] = statistics.median(samples)
    return max((times[12] - times[2]) / 10, 1e-9)


def copy_bandwidth(nbytes: int, repeats: int) -> tuple[float, str]:
    """Bytes/s of a device-to-device copy (read + write counted)."""
    try:
        import cupy as cp

        src = cp.random.randint(0, 2**31 - 1, nbytes // 4, dtype=cp.int32)
        dst = cp.empty_like(src)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(3):
            cp.cuda.runtime.memcpy(dst.data.ptr, src.data.ptr, src.nbytes, 3)
        samples = []
        for _ in range(repeats):
            start.record()
            cp.cuda.runtime.memcpy(dst.data.ptr, src.data.ptr, src.nbytes, 3)
            stop.record()
            stop.synchronize()
            samples.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
        del src, dst
        cp.get_default_memory_pool().free_all_blocks()
        return 2 * (nbytes // 4) * 4 / statistics.median(samples), "cudaMemcpy D2D (CuPy)"
    except Exception:  # noqa: BLE001 - CuPy missing or unusable: fall back to JAX
        x = jax.random.randint(jax.random.key(0), (nbytes // 4,), 0, 2**31 - 1, jnp.int32)
        t = device_time(lambda v: v + 1, (x,), repeats)
        return 2 * x.nbytes / t, "JAX x + 1"


def sorted_keys(key: jax.Array, n: int, dtype) -> jax.Array:
    if jnp.issubdtype(dtype, jnp.floating):
        x = jax.random.normal(key, (n,), dtype)
    else:
        info = jnp.iinfo(dtype)
        x = jax.random.randint(key, (n,), info.min // 2, info.max // 2, dtype)
    return jnp.sort(x)


def searchsorted_merge(a: jax.Array, b: jax.Array) -> jax.Array:
    pos_a = jnp.arange(a.shape[0]) + jnp.searchsorted(b, a, side="left")
    pos_b = jnp.arange(b.shape[0]) + jnp.searchsorted(a, b, side="right")
    out = jnp.empty(a.shape[0] + b.shape[0], a.dtype)
    return out.at[pos_a].set(a, unique_indices=True).at[pos_b].set(b, unique_indices=True)


def concat_sort(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.sort(jnp.concatenate([a, b]))


def concat_sort_pairs(a, b, va, vb):
    return lax.sort((jnp.concatenate([a, b]), jnp.concatenate([va, vb])), num_keys=1)


def bench_case(
    dtype,
    total: int,
    frac_a: float,
    pairs: bool,
    repeats: int,
    copy_bps: float,
    rows: list,
    breakdown: bool = False,
) -> None:
    m = max(1, int(total * frac_a))
    n = total - m
    ka, kb = jax.random.split(jax.random.key(total + int(frac_a * 1000)))
    a, b = sorted_keys(ka, m, dtype), sorted_keys(kb, n, dtype)
    itemsize = np.dtype(dtype).itemsize
    if pairs:
        va = jnp.arange(m, dtype=jnp.int32)
        vb = jnp.arange(m, m + n, dtype=jnp.int32)
        ours = lambda a, b, va, vb: jmp.merge_by_key(a, b, va, vb)  # noqa: E731
        args = (a, b, va, vb)
        base = concat_sort_pairs
        nbytes = 2 * total * (itemsize + 4)
        got, want = ours(*args), base(*args)
        ok = all(
            np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(got, want, strict=True)
        )
        variants = [("jnp lax.sort(concat, num_keys=1)", base)]
    else:
        ours = jmp.merge
        args = (a, b)
        nbytes = 2 * total * itemsize
        got = ours(*args)
        ok = np.array_equal(np.asarray(got), np.asarray(concat_sort(*args)))
        ok = ok and np.array_equal(np.asarray(got), np.asarray(searchsorted_merge(*args)))
        variants = [("jnp.sort(concat)", concat_sort), ("searchsorted+scatter", searchsorted_merge)]
    if not ok:
        raise SystemExit(f"RESULT MISMATCH: {np.dtype(dtype).name} 2^{total.bit_length() - 1}")
    t_ours = device_time(ours, args, repeats, breakdown)
    base_times = [(name, device_time(fn, args, repeats)) for name, fn in variants]
    rows.append(
        {
            "case": f"{'kv ' if pairs else ''}{np.dtype(dtype).name} 2^{total.bit_length() - 1}"
            f" a={frac_a:.0%}",
            "us": t_ours * 1e6,
            "gbps": nbytes / t_ours / 1e9,
            "pct_copy": 100 * nbytes / t_ours / copy_bps,
            "speedups": [(name, t / t_ours) for name, t in base_times],
        }
    )
    r = rows[-1]
    print(
        f"{r['case']:<28} {r['us']:>10.1f} us {r['gbps']:>8.0f} GB/s {r['pct_copy']:>6.1f}% copy  "
        + "  ".join(f"{s:>6.1f}x vs {name}" for name, s in r["speedups"]),
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-log2", type=int, default=16)
    parser.add_argument("--max-log2", type=int, default=28)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--quick", action="store_true", help="int32 keys and pairs only, 2^20 and 2^27"
    )
    parser.add_argument("--breakdown", action="store_true", help="print our kernels' times")
    args = parser.parse_args(argv)
    dev = jax.devices()[0]
    print(
        f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, "
        f"jax_mergepath CUDA={jmp.HAS_CUDA}"
    )
    copy_bps, copy_name = copy_bandwidth(1 << 30, args.repeats)
    print(f"device-to-device copy: {copy_bps / 1e12:.2f} TB/s ({copy_name}, 1 GiB, read+write)")
    print(f"{'case':<28} {'time':>13} {'bandwidth':>13} {'of copy':>11}  speedup")
    rows: list = []
    sizes = (
        [20, 27]
        if args.quick
        else sorted(
            {*range(args.min_log2, args.max_log2 + 1, 2), *([27] if args.max_log2 >= 27 else [])}
        )
    )
    dtypes = [jnp.int32] if args.quick else [jnp.int32, jnp.float32, jnp.int64]
    for log2 in sizes:
        for dtype in dtypes:
            if np.dtype(dtype).itemsize == 8 and not jax.config.jax_enable_x64:
                continue
            for frac in (0.5, 0.01):
                bench_case(
                    dtype, 1 << log2, frac, False, args.repeats, copy_bps, rows, args.breakdown
                )
        bench_case(jnp.int32, 1 << log2, 0.5, True, args.repeats, copy_bps, rows, args.breakdown)


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    main()
