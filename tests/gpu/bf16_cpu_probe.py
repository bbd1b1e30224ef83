"""Which XLA:CPU operation changes bfloat16 bits on this host? (A probe, run by hand.)

fuzz_parity.py case 1000445 (`--replay 1000445 --max-log2 24`) failed on an H200 machine
(jax 0.11.2): lax_sort((int32 key, bfloat16, uint16), num_keys=1) along axis -2 under vmap gave
the bfloat16 subnormal 0x0003 on the GPU but 0x0000 on that machine's CPU device, while the CPU
of a host without AVX-512 (the dev machine, same jax) returns 0x0003 like the reference. This
runs the case and the data movements on its path (transposes, layout copies, vmap of moveaxis,
bit casts, the gather of take_along_bits, lax_sort itself), each jitted on the CPU device, on
bfloat16 data full of subnormals and NaN payloads, and prints each one's count of changed
elements against numpy, plus the host's bfloat16-related CPU flags. The case itself:
`python3 tests/gpu/fuzz_parity.py --replay 1000445 --max-log2 24`.

    python3 tests/gpu/bf16_cpu_probe.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax_mergepath as jmp  # noqa: E402
from jax_mergepath._gather import take_along_bits  # noqa: E402


def host_flags() -> str:
    try:
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    return " ".join(f for f in flags if "bf16" in f or f in ("avx512f", "amx_tile")) or "none"


def main() -> int:
    cpu = jax.devices("cpu")[0]
    rng = np.random.default_rng(0)
    bits = rng.choice(np.array([0x0001, 0x0003, 0x0080, 0x8001, 0x7F81, 0xFFC1, 0x3F80, 0x0000],
                               np.uint16), size=(5, 257, 3))
    x = bits.view(ml_dtypes.bfloat16)
    key = rng.integers(0, 3, (257, 3)).astype(np.int32)
    perm = np.argsort(rng.random((5, 257, 3)), axis=1).astype(np.int32)
    probes = {
        "transpose (2, 1, 0)": (lambda v: jnp.transpose(v, (2, 1, 0)),
                                lambda v: v.transpose(2, 1, 0)),
        "moveaxis -2 -> -1": (lambda v: jnp.moveaxis(v, -2, -1), lambda v: np.moveaxis(v, -2, -1)),
        "vmap moveaxis": (jax.vmap(lambda v: jnp.moveaxis(v, -2, -1)),
                          lambda v: np.moveaxis(v, -2, -1)),
        "bitcast round trip": (lambda v: jax.lax.bitcast_convert_type(
            jax.lax.bitcast_convert_type(v, jnp.uint16), jnp.bfloat16), lambda v: v),
        "take_along_bits axis 1": (lambda v: take_along_bits(v, jnp.asarray(perm), 1),
                                   lambda v: np.take_along_axis(v, perm, 1)),
        "jnp.take_along_axis axis 1": (lambda v: jnp.take_along_axis(v, jnp.asarray(perm), 1),
                                       lambda v: np.take_along_axis(v, perm, 1)),
    }
    print(f"{jax.__version__=}, host CPU flags: {host_flags()}")
    for name, (fn, ref) in probes.items():
        got = np.asarray(jax.jit(fn)(jax.device_put(x, cpu))).view(np.uint16)
        want = np.asarray(ref(x)).view(np.uint16)
        print(f"  {name:28s} {int(np.sum(got != want)):6d} of {want.size} elements changed")
    order = np.argsort(key, axis=0, kind="stable")  # the case's lax_sort by an unbatched key

    def case(k, v):  # the case's three operands: positions formed, the bfloat16 gathered
        return jmp.lax_sort((k, v, jnp.zeros(v.shape, jnp.uint16)), dimension=-2, num_keys=1)[1]

    for name, fn in (("lax_sort", jax.vmap(case, in_axes=(None, 0))),
                     ("lax_sort, keys batched", jax.vmap(case))):
        k = key if name == "lax_sort" else np.broadcast_to(key, x.shape)
        got = np.asarray(jax.jit(fn)(*jax.device_put((k, x), cpu))).view(np.uint16)
        want = np.take_along_axis(bits, np.broadcast_to(order, x.shape), 1)
        print(f"  {name:28s} {int(np.sum(got != want)):6d} of {want.size} elements changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
