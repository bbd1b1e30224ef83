"""Run in a fresh process with host CPU devices of any count (test_sharded_slow.py runs 3, 5, 6 and
7): a sharded sort's received runs merged by one ragged merge on up to eight devices
(docs/architecture.md, "Sharded axis"), on device counts that are not powers of two. Plain jax.jit
on an Explicit mesh over every device; shards of 2**14 and 2**14 + 8 keys (merged where the chunks
land) and 1000 (placed, then merged); random, few distinct, reversed, skewed and rotated keys; sort
and argsort both ways, sort_by_key (a pytree with a 2-D leaf): the unsharded jnp result bit for bit
and the input's sharding. Prints ``ok <case>`` or ``BAD <case>: why`` per case and exits non-zero
on any failure.

    XLA_FLAGS=--xla_force_host_platform_device_count=6 JAX_PLATFORMS=cpu \\
        python tests/sharding/device_counts.py [--quick]
"""

from __future__ import annotations

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np
from harness import assert_same, assert_sharding, case, configure, finish
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp


def keys_of(kind: str, total: int, g: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "random":
        return rng.standard_normal(total).astype(np.float32)
    if kind == "few":
        return rng.integers(0, 3, total).astype(np.int32)
    if kind == "reversed":
        return np.arange(total, 0, -1).astype(np.int32)
    if kind == "skewed":  # 90% one value: pieces longer than a chunk
        return np.where(rng.random(total) < 0.9, 5, rng.integers(0, 100, total)).astype(np.int32)
    assert kind == "rotated"  # each shard sorted, the shards rotated by one device
    return np.roll(np.arange(total, dtype=np.int32), total // g)


OPS = {
    "sort": (jmp.sort, jnp.sort),
    "sort descending": (lambda x: jmp.sort(x, descending=True),
                        lambda x: jnp.sort(x, descending=True)),
    "argsort": (jmp.argsort, lambda x: jnp.argsort(x, stable=True)),
    "argsort descending": (lambda x: jmp.argsort(x, descending=True),
                           lambda x: jnp.argsort(x, stable=True, descending=True)),
    "sort_by_key": (
        lambda x: jmp.sort_by_key(x, {"a": x * 2, "b": jnp.stack([x, -x], -1)}),
        lambda x: (lambda p: (x[p], {"a": (x * 2)[p], "b": jnp.stack([x, -x], -1)[p]}))(
            jnp.argsort(x, stable=True))),
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the core cases only")
    parser.add_argument("-k", default=None, help="run only the cases whose name has this")
    args = parser.parse_args()
    configure(args.quick, args.k)
    g = jax.device_count()
    print(f"jax {jax.__version__}, {g} devices, quick={args.quick}", flush=True)
    mesh = jax.make_mesh((g,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
    sharding = NamedSharding(mesh, P("x"))
    rng = np.random.default_rng(g)
    for shard in (1 << 14, (1 << 14) + 8, 1000):
        for kind in ("random", "few", "reversed", "skewed", "rotated"):
            x = keys_of(kind, shard * g, g, rng)
            for name, (ours, theirs) in OPS.items():
                def run(x=x, ours=ours, theirs=theirs, name=name):
                    xs = jax.device_put(x, sharding)
                    with jax.sharding.set_mesh(mesh):
                        fn = jax.jit(ours)
                        got = fn(xs)
                        text = fn.lower(xs).as_text() if g <= 8 else ""
                    assert_same(got, theirs(jnp.asarray(x)), name)
                    assert_sharding(got, sharding, name)
                    assert not text or "jmp_merge_ragged" in text, "no ragged merge"

                quick = shard == 1 << 14 and kind in ("random", "skewed") and name == "sort"
                case(f"{g} devices, shards of {shard}, {kind}, {name}", run, quick=quick)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
