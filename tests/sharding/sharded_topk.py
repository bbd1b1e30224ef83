"""Run in a fresh process with 8 CPU devices (test_sharded_axis.py, test_sharded_slow.py): top_k
along an axis SHARDED over a mesh axis gives the single-device result bit for bit (values, global
indices), on every device, and compiles to a program whose only gathers are of the candidates
(8 x k), never of the data.

Paths: inside a user's shard_map (``axis_name=``), unchanged code under ``jax.jit`` with arrays
placed on an Explicit mesh, eager calls on such arrays, and plain ``jax.jit`` on arrays placed on
AUTO mesh axes (``jax.sharding.Mesh``'s default; also through ``in_shardings``), with vmap and
grad there. Cases: dtypes, both directions, k
from 1 to the global length (more than a shard), ties across shards, NaNs and -0.0, 2-D arrays
(rows replicated, or sharded on a second mesh axis), top_k_by_key with a pytree payload, grad,
and (with ``--x64``) int64 global indices past 2**31 keys. Prints ``ok <case>`` or
``BAD <case>: why`` per case and exits non-zero on any failure.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \\
        python tests/sharding/sharded_topk.py [--x64] [--quick] [-k SUBSTRING]
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import re
import sys
import traceback
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jax_mergepath as jmp

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))  # tests/: the shared references
from reference import assert_bits_equal, random_keys  # noqa: E402
from select_checks import ref_top_k  # noqa: E402

G = 8
GATHER = re.compile(r"all-gather(?:-start)?\(")
SHAPES = re.compile(r"\b[a-z]+[0-9]*\[([0-9,]*)\]\S*\s+all-gather")
failures: list[str] = []
selected: str | None = None


def case(name: str, fn: Callable[[], str | None]) -> None:
    if selected and selected not in name:
        return
    try:
        note = fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported, the script goes on
        failures.append(name)
        print(f"BAD {name}: {''.join(traceback.format_exception_only(type(e), e)).strip()}",
              flush=True)
        traceback.print_exc(limit=-4, file=sys.stdout)
        return
    print(f"ok {name}" + (f": {note}" if note else ""), flush=True)


def same(got, want, what=""):
    for i, (g, w) in enumerate(zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True)):
        assert_bits_equal(g, w, f"{what} [{i}]")


def single(x, k, axis=-1, largest=True):
    """The single-device result (one device's jmp.top_k, checked against the reference)."""
    got = jmp.top_k(jax.device_put(x, jax.devices()[0]), k, axis=axis, largest=largest)
    same(got, ref_top_k(x, k, axis, largest), "single device vs reference")
    return got


def check_shard_map(mesh, x, k, largest, spec=None, axis=-1):
    spec = P("d") if spec is None else spec
    f = jax.jit(jax.shard_map(
        lambda x: jmp.top_k(x, k, axis=axis, largest=largest, axis_name="d"),
        mesh=mesh, in_specs=spec, out_specs=_replicated(spec, x.ndim, axis)))
    got = f(jax.device_put(x, NamedSharding(mesh, spec)))
    same(got, single(x, k, axis, largest), "shard_map")
    return f"{x.dtype} {x.shape} k={k}"


def _replicated(spec, ndim, axis):
    entries = list(spec) + [None] * (ndim - len(spec))
    entries[axis % ndim] = None
    return P(*entries)


def check_jit(mesh, x, k, largest, spec=None, axis=-1, eager=False):
    spec = P("d") if spec is None else spec
    xs = jax.device_put(x, NamedSharding(mesh, spec))

    def f(x):
        return jmp.top_k(x, k, axis=axis, largest=largest)

    got = f(xs) if eager else jax.jit(f)(xs)
    same(got, single(x, k, axis, largest), "explicit axes")
    want_spec = _replicated(spec, x.ndim, axis)
    for o in got:
        assert o.sharding.is_equivalent_to(NamedSharding(mesh, want_spec), o.ndim), o.sharding
    if eager:
        return f"{x.dtype} {x.shape} k={k} eager"
    text = jax.jit(f).lower(xs).compile().as_text()
    sizes = _gather_sizes(text)
    local = x.size // G
    assert GATHER.search(text), "no all-gather of the candidates"
    assert max(sizes, default=0) <= G * min(k, x.shape[axis] // G) * max(
        1, x.size // x.shape[axis]), f"gathers {sizes} larger than the candidates (shard {local})"
    return f"{x.dtype} {x.shape} k={k}, gathers {sizes}"


def _gather_sizes(text: str) -> list[int]:
    return [int(np.prod([int(d) for d in s.split(",") if d])) for s in SHAPES.findall(text)]


def check_auto(x, k, largest, spec=None, axis=-1, in_shardings=False):
    """Plain jax.jit on auto mesh axes: the single-device result bit for bit, replicated along
    the axis, the program's gathers no larger than the candidates."""
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:G]).reshape(-1), ("d",))
    spec = P("d") if spec is None else spec
    sharding = NamedSharding(mesh, spec)

    def f(x):
        return jmp.top_k(x, k, axis=axis, largest=largest)

    if in_shardings:
        jf = jax.jit(f, in_shardings=sharding)
        arg = x
    else:
        jf = jax.jit(f)
        arg = jax.device_put(x, sharding)
    got = jf(arg)
    same(got, single(x, k, axis, largest), "auto axes")
    want_spec = _replicated(spec, x.ndim, axis)
    for o in got:
        assert o.sharding.is_equivalent_to(NamedSharding(mesh, want_spec), o.ndim), o.sharding
    sizes = _gather_sizes(jf.lower(arg).compile().as_text())
    assert sizes, "no all-gather of the candidates"
    assert max(sizes) <= G * min(k, x.shape[axis] // G) * max(1, x.size // x.shape[axis]), (
        f"gathers {sizes} larger than the candidates")
    return f"{x.dtype} {x.shape} k={k}, gathers {sizes}"


def check_auto_transforms(rng):
    """vmap over rows and grad, on auto mesh axes: the single-device results."""
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:G]), ("d",))
    x2 = random_keys(rng, np.float32, (3, G * 16), "random")
    xs2 = jax.device_put(x2, NamedSharding(mesh, P(None, "d")))
    same(jax.jit(jax.vmap(lambda r: jmp.top_k(r, 5)))(xs2), jmp.top_k(x2, 5), "vmap")
    x = ((rng.permutation(G * 32) - 100) * 0.5).astype(np.float32)
    w = rng.standard_normal(20).astype(np.float32)

    def loss(x):
        return (jmp.top_k(x, 20)[0] * w).sum()

    xs = jax.device_put(x, NamedSharding(mesh, P("d")))
    same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x), "grad")
    keys = random_keys(rng, np.float32, (G * 64,), "few")
    payload = {"pos": rng.standard_normal((G * 64, 3)).astype(np.float32),
               "id": np.arange(G * 64, dtype=np.int32)}
    put = [jax.device_put(a, NamedSharding(mesh, P("d"))) for a in (keys, payload)]
    same(jax.jit(lambda k, p: jmp.top_k_by_key(k, p, 50, largest=False))(*put),
         jmp.top_k_by_key(keys, payload, 50, largest=False), "top_k_by_key")


def check_k0(mesh) -> str:
    """top_k(x, 0) along a split axis, every key kind, eagerly and under jit on explicit axes
    and under jit on auto axes: empty results, replicated along the axis (on the mesh, not one
    device)."""
    auto = jax.sharding.Mesh(np.array(jax.devices()[:G]), ("d",))
    for dtype in (np.int32, np.uint8, np.float32):
        for shape, spec in (((G * 16,), P("d")), ((2, G * 16), P(None, "d"))):
            x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
            for m, how in ((mesh, "eager"), (mesh, "jit"), (auto, "jit")):
                xs = jax.device_put(x, NamedSharding(m, spec))
                f = functools.partial(jmp.top_k, k=0)
                got = f(xs) if how == "eager" else jax.jit(f)(xs)
                same(got, single(x, 0, -1, True), f"{dtype.__name__} {shape} {how}")
                want = NamedSharding(m, _replicated(spec, x.ndim, -1))
                for o in got:
                    assert o.sharding.is_equivalent_to(want, o.ndim), (how, o.sharding)
    return "int32, uint8, float32; 1-d and rows; explicit eager / jit, auto jit"


def check_by_key(mesh, rng, k=50):
    n = G * 64
    keys = random_keys(rng, np.float32, (n,), "few")
    payload = {"pos": rng.standard_normal((n, 3)).astype(np.float32),
               "id": np.arange(n, dtype=np.int32)}
    f = jax.jit(jax.shard_map(
        lambda k_, p: jmp.top_k_by_key(k_, p, k, largest=False, axis_name="d"), mesh=mesh,
        in_specs=(P("d"), P("d")), out_specs=(P(), P())))
    put = [jax.device_put(a, NamedSharding(mesh, P("d"))) for a in (keys, payload)]
    got = f(*put)
    want = jmp.top_k_by_key(keys, payload, k, largest=False)
    same(got, want, "shard_map top_k_by_key")
    same(jax.jit(lambda k_, p: jmp.top_k_by_key(k_, p, k, largest=False))(*put), want,
         "explicit top_k_by_key")
    same(jmp.top_k_by_key(*put, k, largest=False), want, "eager top_k_by_key")


def check_grad(mesh, rng):
    x = ((rng.permutation(G * 32) - 100) * 0.5).astype(np.float32)
    w = rng.standard_normal(20).astype(np.float32)
    want = jax.grad(lambda x: (jmp.top_k(x, 20)[0] * w).sum())(x)
    xs = jax.device_put(x, NamedSharding(mesh, P("d")))
    with jax.set_mesh(mesh):  # (w, a constant, is placed on the mesh: as in plain JAX)
        got = jax.jit(jax.grad(lambda x: (jmp.top_k(x, 20)[0] * w).sum()))(xs)
    same(got, want, "grad, explicit axes")
    f = jax.shard_map(lambda x: (jmp.top_k(x, 20, axis_name="d")[0] * w).sum(), mesh=mesh,
                      in_specs=P("d"), out_specs=P())
    same(jax.jit(jax.grad(f))(xs), want, "grad, shard_map")


def check_grad_rows(mesh2, rng):
    """grad of top_k with the rows split over a second mesh axis (explicit axes, jit), and of a
    per-device top_k of each device's rows inside a user's shard_map: the outputs vary with the
    rows, so no cotangent is summed over the devices."""
    x = (rng.permutation(2 * 32) * 0.5).astype(np.float32).reshape(2, 32)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    want = jax.grad(lambda x: (jax.lax.top_k(x, 3)[0] * w).sum())(x)
    xs, ws = (jax.device_put(a, NamedSharding(mesh2, s))
              for a, s in ((x, P("r", "d")), (w, P("r", None))))
    got = jax.jit(jax.grad(lambda x, w: (jmp.top_k(x, 3)[0] * w).sum()))(xs, ws)
    same(got, want, "grad, rows on a second axis")
    x4 = x.reshape(8, 8)  # a row of 8 keys a device
    w4 = rng.standard_normal((8, 3)).astype(np.float32)
    want = jax.grad(lambda x: (jax.lax.top_k(x, 3)[0] * w4).sum())(x4)
    f = jax.shard_map(lambda x, w: (jmp.top_k(x, 3)[0] * w).sum(keepdims=True)[0],
                      mesh=mesh2, in_specs=(P(("r", "d")), P(("r", "d"))),
                      out_specs=P(("r", "d")))
    put = [jax.device_put(a, NamedSharding(mesh2, P(("r", "d")))) for a in (x4, w4)]
    same(jax.jit(jax.grad(lambda x, w: f(x, w).sum()))(*put), want, "grad, per-device rows")


def check_long_index_dtype(mesh):
    n = 2**31 + 8 * G
    spec = jax.ShapeDtypeStruct((n,), jnp.int8, sharding=NamedSharding(mesh, P("d")))
    out = jax.eval_shape(lambda x: jmp.top_k(x, 3), spec)
    want = np.int64 if jax.config.jax_enable_x64 else None
    if want is None:
        raise AssertionError(f"x64 off should raise, got {out}")
    assert out[1].dtype == want, out
    return f"indices {out[1].dtype}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--x64", action="store_true")
    parser.add_argument("-k", default=None, help="only the cases whose name holds this")
    parser.add_argument("--quick", action="store_true", help="fewer dtypes, patterns and k")
    args = parser.parse_args()
    global selected
    selected = args.k
    jax.config.update("jax_enable_x64", args.x64)
    print(f"jax {jax.__version__}, x64={args.x64}, quick={args.quick}", flush=True)
    rng = np.random.default_rng(5)
    mesh = jax.make_mesh((G,), ("d",))
    mesh2 = jax.make_mesh((2, G // 2), ("r", "d"))
    dtypes = ["float32", "int8", "bfloat16", "uint16"] + (["float64", "int64"] if args.x64
                                                           else [])
    if args.quick:
        dtypes = ["float64"] if args.x64 else ["float32"]
    for dtype in dtypes:
        for pattern in ("random", "equal") if args.quick else ("random", "few", "equal"):
            x = random_keys(rng, np.dtype(jnp.dtype(dtype)), (G * 40,), pattern)
            for k in (7, G * 40) if args.quick else (1, 7, 100, G * 40):
                for largest in (True, False):
                    name = f"{dtype} {pattern} k={k} largest={largest}"
                    case(f"shard_map {name}",
                         lambda x=x, k=k, largest=largest: check_shard_map(mesh, x, k, largest))
                    case(f"jit {name}",
                         lambda x=x, k=k, largest=largest: check_jit(mesh, x, k, largest))
    x = random_keys(rng, np.float32, (G * 1000,), "random")
    case("eager", lambda: check_jit(mesh, x, 30, True, eager=True))
    x2 = random_keys(rng, np.float32, (3, G * 16), "few")
    case("rows replicated, shard_map", lambda: check_shard_map(mesh, x2, 9, True, P(None, "d")))
    case("rows replicated, jit", lambda: check_jit(mesh, x2, 9, False, P(None, "d")))
    x3 = random_keys(rng, np.int32, (2 * 5, 4 * 12), "few")
    case("rows on a second axis, jit",
         lambda: check_jit(mesh2, x3, 11, True, P("r", "d")))
    x4 = random_keys(rng, np.float32, (G * 8, 3), "random")
    case("axis 0 with trailing rows, jit", lambda: check_jit(mesh, x4, 5, True, P("d"), 0))
    case("top_k_by_key", lambda: check_by_key(mesh, rng))
    case("top_k_by_key k=0", lambda: check_by_key(mesh, rng, 0))
    case("top_k k=0", lambda: check_k0(mesh))
    xa = random_keys(rng, np.float32, (G * 100,), "random")
    case("auto axes, jit", lambda: check_auto(xa, 17, True))
    if not args.quick:
        case("auto axes, in_shardings", lambda: check_auto(xa, 17, False, in_shardings=True))
        case("auto axes, rows", lambda: check_auto(x2, 9, True, P(None, "d")))
        case("auto axes, axis 0 with trailing rows",
             lambda: check_auto(x4, 5, False, P("d"), 0))
        case("auto axes, vmap / grad / top_k_by_key", lambda: check_auto_transforms(rng))
    case("grad", lambda: check_grad(mesh, rng))
    case("grad, rows split", lambda: check_grad_rows(mesh2, rng))
    if args.x64:
        case("int64 global indices past 2**31 keys", lambda: check_long_index_dtype(mesh))
    print(f"{len(failures)} failures", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
