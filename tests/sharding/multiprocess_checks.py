"""The cases multiprocess_sort.py runs in each process (after jax.distributed.initialize): numpy
references (jnp.argsort's order: -0.0 == +0.0, NaNs last, stable), the same seeded data in every
process, and a check of a global array's addressable shards, bit for bit, with its sharding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


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


class Checks:
    """The cases over g devices, `local` of them this process's, arrays of n keys."""

    def __init__(self, g: int, local: int, n: int, process: int):
        self.g, self.local, self.n, self.process = g, local, n, process
        self.explicit = jax.make_mesh((g,), ("d",))
        self.auto = Mesh(np.array(jax.devices()), ("d",))  # auto axes
        rng = np.random.default_rng(1234)
        x = (np.round(rng.standard_normal(n) * 8) / 2).astype(np.float32)
        nans = np.array([0x7FC00000, 0xFFC00000, 0x7FC00001], np.uint32).view(np.float32)
        pool = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf], np.float32), nans])
        self.x = np.where(rng.random(n) < 0.1, rng.choice(pool, n), x).astype(np.float32)
        # rotated shards: the globally sorted keys rolled by 3 shards (skew across processes)
        self.k = np.roll(np.sort(rng.integers(-50, 50, n).astype(np.int32)), 3 * (n // g))

    def put(self, x: np.ndarray, mesh: Mesh) -> jax.Array:
        """x as a global array split over mesh (each process builds its own shards)."""
        sharding = NamedSharding(mesh, P("d"))
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    def check(self, out: jax.Array, want: np.ndarray, mesh: Mesh) -> str:
        """Every addressable shard of out equals want at its index, bit for bit; out split as
        the inputs."""
        assert out.shape == want.shape, (out.shape, want.shape)
        assert out.sharding.is_equivalent_to(NamedSharding(mesh, P("d")), out.ndim), out.sharding
        shards = out.addressable_shards
        assert len(shards) == self.local, len(shards)
        for s in shards:
            got, w = np.asarray(s.data), want[s.index]
            assert got.dtype == w.dtype, (got.dtype, w.dtype)
            bad = np.flatnonzero(to_bits(got) != to_bits(w))
            if bad.size:
                raise AssertionError(
                    f"shard {s.index} on {s.device}: {bad.size} of {got.size} differ; first at "
                    f"{int(bad[0])}: got {got[bad[0]]!r}, want {w[bad[0]]!r}")
        return f"{len(shards)} shards of {shards[0].data.shape}"

    def plumbing(self) -> str:
        """Plain jax: a cross-process all_to_all and psum."""
        g, mesh, k = self.g, self.explicit, self.k
        f = jax.jit(jax.shard_map(
            lambda v: jax.lax.all_to_all(v.reshape(g, -1), "d", 0, 0, tiled=True).reshape(-1)
            + jax.lax.psum(jnp.sum(v), "d"), mesh=mesh, in_specs=P("d"), out_specs=P("d")))
        blocks = k.reshape(g, g, -1)  # blocks[i, j]: device i's piece for device j
        want = blocks.transpose(1, 0, 2).reshape(-1) + np.int32(k.sum())
        return self.check(f(self.put(k, mesh)), want, mesh)

    def cases(self, plain: bool) -> Iterator[tuple[str, Callable[[], str]]]:
        yield "plain jax all_to_all + psum across processes", self.plumbing
        if plain:
            return
        import jax_mergepath as jmp

        smap = functools.partial(jax.shard_map, mesh=self.explicit, in_specs=P("d"),
                                 out_specs=P("d"))
        sort_d = functools.partial(jmp.sort, descending=True)
        argsort_d = functools.partial(jmp.argsort, descending=True)
        calls = [  # name, function, want of the keys, meshes
            ("jit(jmp.sort)", jax.jit(jmp.sort), ref_sort),
            ("jit(jmp.sort) descending", jax.jit(sort_d), functools.partial(ref_sort,
                                                                            descending=True)),
            ("jit(jmp.argsort) descending", jax.jit(argsort_d), lambda v: ref_argsort(
                v, True).astype(np.int32)),
            ("jmp.argsort (eager)", jmp.argsort, lambda v: ref_argsort(v).astype(np.int32)),
            ("shard_map sort", jax.jit(smap(lambda v: jmp.sort(v, axis_name="d"))), ref_sort),
            ("shard_map argsort", jax.jit(smap(lambda v: jmp.argsort(v, axis_name="d"))),
             lambda v: ref_argsort(v).astype(np.int32)),
        ]
        for what, keys in [("float32", self.x), ("int32 rotated", self.k)]:
            for name, fn, want in calls:
                meshes = [("explicit", self.explicit)]
                if name.startswith("jit") or "eager" in name:
                    meshes.append(("auto", self.auto))
                for axes, mesh in meshes:
                    yield (f"{name} {what} ({axes} axes)",
                           functools.partial(self._one, fn, keys, want, mesh))
        yield "shard_map sort_by_key", self._sort_by_key
        for axes, mesh in [("explicit", self.explicit), ("auto", self.auto)]:
            yield f"jit(jmp.merge) with indices ({axes} axes)", functools.partial(
                self._merge, mesh)

    def _one(self, fn, keys: np.ndarray, want, mesh: Mesh) -> str:
        return self.check(fn(self.put(keys, mesh)), want(keys), mesh)

    def _sort_by_key(self) -> str:
        import jax_mergepath as jmp

        f = jax.jit(jax.shard_map(lambda a, b: jmp.sort_by_key(a, b, axis_name="d"),
                                  mesh=self.explicit, in_specs=P("d"), out_specs=P("d")))
        keys, vals = f(self.put(self.x, self.explicit), self.put(self.k, self.explicit))
        perm = ref_argsort(self.x)
        self.check(keys, self.x[perm], self.explicit)
        return self.check(vals, self.k[perm], self.explicit)

    def _merge(self, mesh: Mesh) -> str:
        """merge of the sorted float keys and the sorted int keys (as float32), with indices:
        the stable sort of their concatenation (ties: a first)."""
        import jax_mergepath as jmp

        a = ref_sort(self.x)
        b = np.sort(self.k).astype(np.float32)
        merged, idx = jax.jit(functools.partial(jmp.merge, return_indices=True))(
            self.put(a, mesh), self.put(b, mesh))
        perm = ref_argsort(np.concatenate([a, b]))
        self.check(merged, np.concatenate([a, b])[perm], mesh)
        return self.check(idx, perm.astype(np.int32), mesh)
