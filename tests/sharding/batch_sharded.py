"""Run in a fresh process with 4 CPU devices (see test_sharding.py): every operation on
batch-sharded rows compiles to a program without collectives, keeps the batch sharding, and
gives the unsharded result. Prints one line per case and exits non-zero on any failure."""

from __future__ import annotations

import re
import sys

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp

COLLECTIVES = re.compile(r"all-gather|all-reduce|all-to-all|collective-permute|reduce-scatter")


def main() -> int:
    devices = jax.devices()
    assert len(devices) == 4, devices
    print(f"partitioner: {'shardy' if jax.config.jax_use_shardy_partitioner else 'gspmd'}")
    mesh = Mesh(np.array(devices), ("rows",))
    rows = NamedSharding(mesh, P("rows"))
    rng = np.random.default_rng(0)
    a = np.sort(rng.integers(0, 100, (8, 3000)), axis=-1).astype(np.int32)
    b = np.sort(rng.integers(0, 100, (8, 2000)), axis=-1).astype(np.int32)
    x = rng.integers(0, 1000, (8, 5000)).astype(np.int32)
    va, vb = a.astype(np.float32), b.astype(np.float32)
    cases = {
        "merge": (jmp.merge, (a, b)),
        "merge indices": (lambda a, b: jmp.merge(a, b, return_indices=True), (a, b)),
        "merge_by_key": (jmp.merge_by_key, (a, b, va, vb)),
        "merge_runs": (lambda x: jmp.merge_runs(x, 2500), (np.sort(x, axis=-1),)),
        "vmap merge": (jax.vmap(jmp.merge), (a, b)),
        "vmap merge_by_key": (jax.vmap(jmp.merge_by_key), (a, b, va, vb)),
        "vmap merge_runs": (jax.vmap(lambda x: jmp.merge_runs(x, 2500)), (np.sort(x, axis=-1),)),
        "sort": (jmp.sort, (x,)),
        "argsort": (jmp.argsort, (x,)),
        "sort_by_key": (jmp.sort_by_key, (x, x.astype(np.float32))),
        "vmap sort": (jax.vmap(jmp.sort), (x,)),
        "searchsorted": (jmp.searchsorted, (np.sort(x, axis=-1), x[:, :100])),
        "is_sorted": (jmp.is_sorted, (x,)),
        "top_k": (lambda x: jmp.top_k(x, 40), (x,)),
        "vmap top_k smallest": (jax.vmap(lambda x: jmp.top_k(x, 9, largest=False)), (x,)),
    }
    failed = 0
    for name, (fn, args) in cases.items():
        sharded = [jax.device_put(arg, rows) for arg in args]
        compiled = jax.jit(fn).lower(*sharded).compile()
        text = compiled.as_text()
        outs = jax.tree.leaves(compiled(*sharded))
        want = jax.tree.leaves(jax.jit(fn)(*args))
        collectives = sorted(set(COLLECTIVES.findall(text)))
        kept = all(o.sharding.is_equivalent_to(rows, o.ndim) for o in outs)
        same = all(np.array_equal(np.asarray(o), np.asarray(w)) for o, w in zip(outs, want,
                                                                                 strict=True))
        ok = not collectives and kept and same
        failed += not ok
        print(f"{'ok ' if ok else 'BAD'} {name}: collectives={collectives} batch-sharded={kept} "
              f"equal={same}")
    return 1 if failed else 0


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    sys.exit(main())
