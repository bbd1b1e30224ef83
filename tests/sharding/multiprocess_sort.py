"""One of 2 processes on localhost, each with 4 CPU devices (see test_sharded_axis.py): a global
array sharded over all 8 devices of the 2 processes is sorted by unchanged user code
(``jax.jit(jmp.sort)``, ``jmp.argsort``) and inside a shard_map (``axis_name=``); each process
checks its addressable shards against numpy's stable sort of the full (seeded) data, bit for
bit. Prints ``ok <case>`` or ``BAD <case>: why`` per case and exits non-zero on any failure.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 JAX_PLATFORMS=cpu \\
        python tests/sharding/multiprocess_sort.py PROCESS_ID PORT [--plain]

``--plain``: only the plain-jax plumbing (a cross-process psum and all_to_all), no jax_mergepath.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import traceback
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

PROCESSES = 2
LOCAL_DEVICES = 4
G = PROCESSES * LOCAL_DEVICES
N = G * 3000

failures: list[str] = []


def case(name: str, fn: Callable[[], str | None]) -> None:
    t0 = time.perf_counter()
    try:
        note = fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported, the script goes on
        failures.append(name)
        msg = "".join(traceback.format_exception_only(type(e), e)).strip().replace("\n", " | ")
        print(f"BAD {name}: {msg[:1500]}", flush=True)
        if not isinstance(e, AssertionError):
            traceback.print_exc(limit=-4, file=sys.stdout)
        return
    dt = time.perf_counter() - t0
    print(f"ok {name}" + (f": {note}" if note else "") + f" ({dt:.1f} s)", flush=True)


def to_bits(x: np.ndarray) -> np.ndarray:
    return x if x.dtype.kind in "iu" else x.view(np.dtype(f"u{x.dtype.itemsize}"))


def order_key(x: np.ndarray) -> np.ndarray:
    """Unsigned keys ordered as jnp.argsort orders the floats x: -0.0 == +0.0, NaNs last."""
    if x.dtype.kind != "f":
        return x
    udt = np.dtype(f"u{x.dtype.itemsize}")
    sign = udt.type(1 << (8 * x.dtype.itemsize - 1))
    u = to_bits(x).astype(udt)
    u = np.where(u == sign, udt.type(0), u)
    nan = (u & ~sign) > to_bits(np.array(np.inf, x.dtype))
    key = np.where(u & sign, ~u, u | sign)
    return np.where(nan, np.iinfo(udt).max, key).astype(udt)


def ref_argsort(x: np.ndarray, descending: bool = False) -> np.ndarray:
    """jnp.argsort(x, stable=True, descending=descending), by numpy."""
    k = order_key(x)
    if descending:
        return (len(k) - 1 - np.argsort(k[::-1], kind="stable"))[::-1]
    return np.argsort(k, kind="stable")


def ref_sort(x: np.ndarray, descending: bool = False) -> np.ndarray:
    """jnp.sort(x, descending=descending): the ascending stable sort, reversed when descending."""
    up = x[ref_argsort(x)]
    return up[::-1] if descending else up


def check_shards(out: jax.Array, want: np.ndarray, sharding: NamedSharding) -> str:
    """Every addressable shard of out equals want at its index, bit for bit; out has the
    input's sharding."""
    assert out.shape == want.shape, (out.shape, want.shape)
    assert out.sharding.is_equivalent_to(sharding, out.ndim), out.sharding
    shards = out.addressable_shards
    assert len(shards) == LOCAL_DEVICES, len(shards)
    for s in shards:
        got = np.asarray(s.data)
        w = want[s.index]
        assert got.dtype == w.dtype, (got.dtype, w.dtype)
        bad = np.flatnonzero(to_bits(got) != to_bits(w))
        if bad.size:
            raise AssertionError(
                f"shard {s.index} on {s.device}: {bad.size} of {got.size} differ; first at "
                f"{int(bad[0])}: got {got[bad[0]]!r}, want {w[bad[0]]!r}")
    return f"{len(shards)} shards of {shards[0].data.shape}"


def data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The same float32 keys (ties, NaNs of both signs and payloads, +-0.0, +-inf) and int32
    keys in every process."""
    rng = np.random.default_rng(seed)
    x = (np.round(rng.standard_normal(N) * 8) / 2).astype(np.float32)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7FC00001], np.uint32).view(np.float32)
    pool = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf], np.float32), nans])
    x = np.where(rng.random(N) < 0.1, rng.choice(pool, N), x).astype(np.float32)
    # rotated shards: the globally sorted keys rolled by 3 shards (skew across processes)
    k = np.roll(np.sort(rng.integers(-50, 50, N).astype(np.int32)), 3 * (N // G))
    return x, k


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("process_id", type=int)
    parser.add_argument("port", type=int)
    parser.add_argument("--plain", action="store_true")
    args = parser.parse_args()
    try:  # the CPU's cross-process collectives (gloo); the option's name varies by version
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except Exception as e:  # noqa: BLE001
        print(f"note: no gloo option ({e})")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{args.port}",
                               num_processes=PROCESSES, process_id=args.process_id)
    assert jax.process_count() == PROCESSES, jax.process_count()
    assert jax.device_count() == G and jax.local_device_count() == LOCAL_DEVICES, jax.devices()
    mesh = jax.make_mesh((G,), ("d",))
    sh = NamedSharding(mesh, P("d"))
    x, k = data(1234)
    xs = jax.make_array_from_callback(x.shape, sh, lambda idx: x[idx])
    ks = jax.make_array_from_callback(k.shape, sh, lambda idx: k[idx])
    assert len(xs.addressable_shards) == LOCAL_DEVICES

    def plumbing():
        f = jax.jit(jax.shard_map(
            lambda v: jax.lax.all_to_all(v.reshape(G, -1), "d", 0, 0, tiled=True).reshape(-1)
            + jax.lax.psum(jnp.sum(v), "d"), mesh=mesh, in_specs=P("d"), out_specs=P("d")))
        out = f(ks)
        blocks = k.reshape(G, G, -1)  # blocks[i, j]: device i's piece for device j
        want = blocks.transpose(1, 0, 2).reshape(-1) + np.int32(k.sum())
        return check_shards(out, want, sh)

    case(f"process {args.process_id}: plain jax all_to_all + psum across processes", plumbing)
    if not args.plain:
        import jax_mergepath as jmp

        sort_d = jax.jit(functools.partial(jmp.sort, descending=True))
        argsort_d = jax.jit(functools.partial(jmp.argsort, descending=True))
        smap = functools.partial(jax.shard_map, mesh=mesh, in_specs=P("d"), out_specs=P("d"))
        sm_sort = jax.jit(smap(lambda v: jmp.sort(v, axis_name="d")))
        sm_argsort = jax.jit(smap(lambda v: jmp.argsort(v, axis_name="d")))
        sm_sbk = jax.jit(smap(lambda a, b: jmp.sort_by_key(a, b, axis_name="d")))
        pid = args.process_id
        for what, arr, a_np in [("float32", xs, x), ("int32 rotated", ks, k)]:
            case(f"process {pid}: jit(jmp.sort) {what}",
                 lambda arr=arr, a_np=a_np: check_shards(jax.jit(jmp.sort)(arr), ref_sort(a_np),
                                                         sh))
            case(f"process {pid}: jmp.argsort (eager) {what}",
                 lambda arr=arr, a_np=a_np: check_shards(jmp.argsort(arr), ref_argsort(
                     a_np).astype(np.int32), sh))
            case(f"process {pid}: jit(jmp.sort) descending {what}",
                 lambda arr=arr, a_np=a_np: check_shards(sort_d(arr), ref_sort(a_np, True), sh))
            case(f"process {pid}: jit(jmp.argsort) descending {what}",
                 lambda arr=arr, a_np=a_np: check_shards(argsort_d(arr), ref_argsort(
                     a_np, True).astype(np.int32), sh))
            case(f"process {pid}: shard_map sort {what}",
                 lambda arr=arr, a_np=a_np: check_shards(sm_sort(arr), ref_sort(a_np), sh))
            case(f"process {pid}: shard_map argsort {what}",
                 lambda arr=arr, a_np=a_np: check_shards(sm_argsort(arr), ref_argsort(
                     a_np).astype(np.int32), sh))

        def sbk():
            keys, vals = sm_sbk(xs, ks)
            perm = ref_argsort(x)
            check_shards(keys, x[perm], sh)
            return check_shards(vals, k[perm], sh)

        case(f"process {pid}: shard_map sort_by_key", sbk)
    print(f"process {args.process_id}: {len(failures)} failed", flush=True)
    jax.distributed.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
