"""Run in a fresh process with 8 CPU devices (see test_sharded_axis.py): every primitive keeps its
operands' sharding in its abstract value, so jit, vmap and grad of every function on arrays
split over EXPLICIT mesh axes (the sharding in the type) work wherever jnp's do
(docs/contract.md "Sharding"): rows split, the sorted axis split, or both on a 2-D mesh; the
single-device results, the outputs typed and placed as jnp's. Also the checked mode on 2, 4 and 8
devices: sorts under jit and in shard_map carry no check, merges check the user's arrays. Prints
``ok <case>`` or ``BAD <case>: why`` per case and exits non-zero on any failure.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \\
        python tests/sharding/sharded_types.py [--quick] [--x64] [-k SUBSTRING]
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from harness import G, assert_same, case, finish, keys, local0, start
from jax.experimental import checkify
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp


def calls() -> dict:
    """name: (jmp function of one (rows, n) array, its jnp / one-device spelling)."""
    def searchsorted(x):  # (rows of queries in rows of a)
        search = jnp.searchsorted if x.ndim == 1 else jax.vmap(jnp.searchsorted)
        return search(jnp.sort(x), x[..., :8])

    return {
        "sort": (jmp.sort, jnp.sort),
        "sort descending": (functools.partial(jmp.sort, descending=True),
                            functools.partial(jnp.sort, descending=True)),
        "argsort": (jmp.argsort, functools.partial(jnp.argsort, stable=True)),
        "sort_by_key": (lambda x: jmp.sort_by_key(x, -x), lambda x: jax.lax.sort_key_val(x, -x)),
        "lax_sort": (lambda x: jmp.lax_sort((x, -x), num_keys=2),
                     lambda x: jax.lax.sort((x, -x), num_keys=2)),
        "merge": (lambda x: jmp.merge(jmp.sort(x), jmp.sort(-x), return_indices=True),
                  lambda x: jmp.merge(jnp.sort(x), jnp.sort(-x), return_indices=True)),
        "merge_runs": (lambda x: jmp.merge_runs(jmp.sort(x), 5),
                       lambda x: jmp.merge_runs(jnp.sort(x), 5)),
        "co_rank": (lambda x: jmp.co_rank(3, jmp.sort(x), jmp.sort(-x)),
                    lambda x: jmp.co_rank(3, jnp.sort(x), jnp.sort(-x))),
        "is_sorted": (jmp.is_sorted, jmp.is_sorted),
        "searchsorted": (lambda x: jmp.searchsorted(jmp.sort(x), x[..., :8]), searchsorted),
    }


def check_types(x: np.ndarray, mesh: Any, spec: P, how: str) -> str:
    """Every call of calls() under jit (how: plain, vmap over the rows, grad of the sorted
    values) on x split by spec: the result on one device, and the output sharding jnp's gets."""
    xs = jax.device_put(x, NamedSharding(mesh, spec))
    done = []
    for name, (fn, ref) in calls().items():
        if how == "vmap":
            fn, ref = jax.vmap(fn), jax.vmap(ref)
        got = jax.jit(fn)(xs)
        assert_same(got, ref(local0(x)), name)
        done.append(name)
    if how == "grad":
        w = local0(np.linspace(-1, 1, x.shape[-1], dtype=x.dtype))

        def loss(f):
            return lambda v: jnp.sum(f(v) * w)

        got = jax.jit(jax.grad(loss(jmp.sort)))(xs)
        assert_same(got, jax.grad(loss(jnp.sort))(local0(x)), "grad")
        assert got.sharding.is_equivalent_to(xs.sharding, x.ndim), (got.sharding, xs.sharding)
    return f"{how}: {len(done)} functions on {x.shape} {spec}"


def check_checked_sort(rng: np.random.Generator, g: int, how: str) -> str:
    """Inside check_sorted_inputs(): a sort over g devices (shards of 2**14 keys: the received
    runs merged) carries no checkify check, under jit on explicit axes or in shard_map."""
    mesh = jax.make_mesh((g,), ("c",), devices=jax.devices()[:g])
    x = keys(rng, np.float32, g * 2**14)
    xs = jax.device_put(x, NamedSharding(mesh, P("c")))
    if how == "jit":
        f = jax.jit(jmp.sort)
    else:
        f = jax.jit(jax.shard_map(lambda v: jmp.sort(v, axis_name="c"), mesh=mesh,
                                  in_specs=P("c"), out_specs=P("c")))
    with jmp.check_sorted_inputs():
        got = f(xs)
        assert not re.search(r"\bcheck\[", str(jax.make_jaxpr(f)(xs))), "a check in the sort"
    assert_same(got, jnp.sort(local0(x)), "sort")
    return f"float32 {g} x 2**14"


def check_checked_merge(rng: np.random.Generator, g: int) -> str:
    """Inside check_sorted_inputs(), a merge over g devices (jit on an auto-axis mesh, under
    checkify) checks the whole a and b: sorted shards pass, a boundary out of order is named."""
    mesh = jax.make_mesh((g,), ("c",), devices=jax.devices()[:g],
                         axis_types=(jax.sharding.AxisType.Auto,))
    a = np.sort(keys(rng, np.float32, g * 2**12, "ties3"))
    b = np.sort(keys(rng, np.float32, g * 2**12, "ties3"))
    bad = a.copy()
    bad[2**12 - 1] = np.inf  # device 0's last element above device 1's first
    f = checkify.checkify(jax.jit(jmp.merge))
    put = functools.partial(jax.device_put, device=NamedSharding(mesh, P("c")))
    with jmp.check_sorted_inputs():
        err, got = f(put(a), put(b))
        bad_err, _ = f(put(bad), put(b))
    assert err.get() is None, err.get()
    assert_same(got, jmp.merge(local0(a), local0(b)), "merge")
    assert bad_err.get() is not None and "merge: a is not sorted" in bad_err.get(), bad_err.get()
    return f"{g} devices: sorted passes, a boundary is named"


def check_checked_merge_runs_eager(rng: np.random.Generator) -> str:
    """Inside check_sorted_inputs(), merge_runs called eagerly on explicit axes (the runs' valid
    parts read without a gather from the split axis): sorted runs merge, an unsorted one is
    named."""
    mesh = jax.make_mesh((G,), ("d",))
    for batch in ((), (3,)):
        x = keys(rng, np.int32, (*batch, G * 16), "mixed")
        x[..., :40] = np.sort(x[..., :40], axis=-1)
        x[..., 40:] = np.sort(x[..., 40:], axis=-1)
        spec = P(*[None] * len(batch), "d")
        put = functools.partial(jax.device_put, device=NamedSharding(mesh, spec))
        with jmp.check_sorted_inputs():
            got = jmp.merge_runs(put(x), 40)
            bad = x.copy()
            bad[..., 70], bad[..., 71] = x[..., 71] + 1, x[..., 70]  # the second run's pair
            try:
                jmp.merge_runs(put(bad), 40)
            except Exception as err:  # noqa: BLE001 - the message is checked
                assert "merge_runs: x" in str(err) and "not sorted" in str(err), err
            else:
                raise AssertionError("an unsorted run passed the checked mode")
        assert_same(got, jmp.merge_runs(local0(x), 40), "merge_runs")
    return "batch () and (3,): sorted runs merge, an unsorted run is named"


def main() -> int:
    args = start()
    mesh = jax.make_mesh((G,), ("d",))  # explicit axes
    mesh2 = jax.make_mesh((2, G // 2), ("r", "d"))
    rng = np.random.default_rng(20260313 + args.x64)
    dt = np.float64 if args.x64 else np.float32
    for how in ["plain", "vmap", "grad"]:
        for label, x, m, spec in [
            ("rows split", keys(rng, dt, (G, 64)), mesh, P("d", None)),
            ("sorted axis split", keys(rng, dt, (4, G * 64)), mesh, P(None, "d")),
            ("both on a 2x4 mesh", keys(rng, dt, (4, G * 64)), mesh2, P("r", "d")),
        ]:
            if how == "vmap" and label.startswith("both"):
                continue  # (jax 0.10.2: vmap of a shard_map over a split batch axis raises)
            case(f"{how} {label}", lambda x=x, m=m, spec=spec, how=how: check_types(
                x, m, spec, how), quick=label == "rows split" or how == "grad")
    for g in (2, 4, 8):
        for how in ["jit", "shard_map"]:
            case(f"checked mode sort {how} {g} devices",
                 lambda g=g, how=how: check_checked_sort(rng, g, how), quick=g == 8)
        case(f"checked mode merge {g} devices", lambda g=g: check_checked_merge(rng, g),
             quick=g == 8)
    case("checked mode merge_runs eager, explicit axes",
         lambda: check_checked_merge_runs_eager(rng), quick=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
