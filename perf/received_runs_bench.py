"""The last stage of a sharded sort on one GPU: the g sorted runs one all_to_all leaves on a
device (each at the start of a chunk of EXCHANGE_CHUNK x n / g keys) merged into its n keys
(docs/performance.md "Sharded axis"). Ways, user-visible (back-to-back jitted calls, blocked
once), checked against each other:
  ragged:   one ragged merge of the g runs (_dispatch.merge_ragged_rows: the sharded sort, g <= 8);
  pairwise: log2 g levels of two-way merges of ragged rows (the sharded sort before it, g a power
            of two);
  sort:     a stable sort of the runs placed one after another (before it, every other g);
and JAX's x + 1 of n keys (one read and one write: the floor). With --values, int32 values ride
along (argsort's positions); with --trace, each way's kernel time and largest kernels.

    python -m perf.received_runs_bench [--log2 28] [--devices 2 3 4 6 8] [--values] [--trace]
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

from jax_mergepath._dispatch import merge_by_key_rows, merge_ragged_rows, sort_rows
from jax_mergepath._primitives import Payload
from jax_mergepath._sharded.exchange import exchange_chunk
from perf.bench.trace import named_jit, traced
from perf.sharded_bench import timed


def received(n: int, g: int, dtype, values: bool):
    """(chunks (g, chunk), lengths (g,), values or None): run r, lengths[r] random keys sorted,
    at the start of chunk r; the lengths sum to n."""
    chunk = exchange_chunk(n, g)
    lengths = np.full(g, n // g, np.int32)
    lengths[: n % g] += 1

    def make():
        key = jax.random.key(g)
        if jnp.issubdtype(dtype, jnp.floating):
            x = jax.random.normal(key, (g, chunk), dtype)
        else:
            x = jax.random.randint(key, (g, chunk), -(2**31), 2**31 - 1, dtype)
        v = jax.random.randint(jax.random.key(7), (g, chunk), 0, n, np.int32)
        return jnp.sort(x, axis=-1), (v if values else None)

    x, v = jax.jit(make)()
    return x, jnp.asarray(lengths), v


def ways(n: int, g: int, chunk: int):
    starts = jnp.arange(g, dtype=np.int32) * chunk

    def ragged(x, lengths, v):
        keys, moved = merge_ragged_rows(x.reshape(-1), starts, lengths,
                                        [] if v is None else [v.reshape(-1)], out_length=n,
                                        descending=False)
        return keys, moved

    def pairwise(x, lengths, v):
        vals = [] if v is None else [v]
        while x.shape[0] > 1:  # rows 2i and 2i + 1 merged, their lengths adding
            la, lb = lengths[0::2], lengths[1::2]
            x, vals = merge_by_key_rows(x[0::2], x[1::2], la, lb, [w[0::2] for w in vals],
                                        [w[1::2] for w in vals], descending=False,
                                        full_rows=False, op="bench")
            lengths = la + lb
        return x[0, :n], [w[0, :n] for w in vals]

    def sort(placed, v):
        if v is None:
            return sort_rows(placed, (), descending=False, payload=Payload.NONE, op="bench")[0], []
        keys, moved = sort_rows(placed, (v,), descending=False, payload=Payload.VALUE, op="bench")
        return keys, [moved]

    out = {"ragged": named_jit(ragged), "sort": named_jit(sort)}
    if g & (g - 1) == 0:
        out["pairwise"] = named_jit(pairwise)
    return out


def kernel_time(fn, tag: str, args: tuple, reps: int) -> str:
    """The kernels' busy time a call from a profiler trace, and its largest events."""
    found = traced([SimpleNamespace(f=fn, args=args, est_s=0.0)], reps, "gpu", {"jit_" + tag})
    if "jit_" + tag not in found:
        return "(no trace)"
    busy, events = found["jit_" + tag]
    top = sorted(events.items(), key=lambda kv: -kv[1])[:3]
    return f"kernels {busy / reps / 1e3:8.1f} us: " + ", ".join(
        f"{name[:40]} {ns / reps / 1e3:.1f}" for name, ns in top)


def place(x, lengths, v, n: int):
    """The runs one after another (what the general exchange lays out)."""
    idx = np.concatenate([r * x.shape[1] + np.arange(m) for r, m in enumerate(np.asarray(lengths))])
    idx = jnp.asarray(idx.astype(np.int32))
    return x.reshape(-1)[idx], (None if v is None else v.reshape(-1)[idx])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2", type=int, default=28)
    parser.add_argument("--devices", type=int, nargs="+", default=[2, 3, 4, 6, 8])
    parser.add_argument("--dtypes", nargs="+", default=["int32", "float32"])
    parser.add_argument("--values", action="store_true", help="int32 values ride along")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--trace", action="store_true",
                        help="also the kernels' time a call, from a profiler trace")
    args = parser.parse_args()
    n = 1 << args.log2
    dev = jax.devices()[0]
    print(f"# {dev.device_kind}, jax {jax.__version__}, n = 2^{args.log2} keys"
          + (" + int32 values" if args.values else ""))
    print("dtype    g  way       us     % of x+1's rate")
    for dtype in args.dtypes:
        floor_x = jnp.zeros(n, dtype)
        floor = timed(jax.jit(lambda x: x + 1), floor_x, reps=args.reps)
        del floor_x
        print(f"{dtype:8s} -  x + 1  {floor * 1e6:9.1f}")
        for g in args.devices:
            x, lengths, v = received(n, g, np.dtype(dtype), args.values)
            results = {}
            for name, (fn, tag) in ways(n, g, x.shape[1]).items():
                operands = (*place(x, lengths, v, n),) if name == "sort" else (x, lengths, v)
                reps = max(3, args.reps // 4) if name == "sort" else args.reps
                t = timed(fn, *operands, reps=reps)
                results[name] = fn(*operands)
                kernels = kernel_time(fn, tag, operands, reps) if args.trace else ""
                del operands
                print(f"{dtype:8s} {g}  {name:8s} {t * 1e6:9.1f}  {100 * floor / t:5.1f}%  "
                      f"{kernels}", flush=True)
            want = results["sort"]
            for name, got in results.items():
                same = all(bool(jnp.array_equal(a, b)) for a, b in
                           zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True))
                assert same, f"{dtype} g={g}: {name} differs from the sort"
            del x, v, results, want
    print("# checked: every way's output equal to the sort's")


if __name__ == "__main__":
    main()
