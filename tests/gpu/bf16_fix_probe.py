"""Which bfloat16 data movement of fuzz case 1000445 flushes subnormals on an XLA:CPU host with
avx512_bf16, and do the optimization barriers around _gather's bit casts keep them? (A probe,
run by hand on such a host: LLVM lowers float -> bfloat16 truncations there to vcvtneps2bf16,
which flushes subnormals, so a bf16 value that XLA widens to f32 and narrows back loses them.)

Prints, on the CPU device: the case's elements that differ from the reference with _on_bits
without barriers (before the fix) and as the library has it; bit casts of bf16 <-> uint16
fused with integer work, alone and with a transpose; and the bf16 fusions of the case's
compiled program.

    python3 tests/gpu/bf16_fix_probe.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_parity as fp  # noqa: E402

from jax_mergepath import _gather  # noqa: E402

LIBRARY = _gather._on_bits  # the barriers around bfloat16's bit casts


def on_bits_plain(fn, dtype, *arrays):
    """_on_bits without barriers (before the fix)."""
    if not jnp.issubdtype(dtype, jnp.floating):
        return fn(*arrays)
    uint = jnp.dtype(f"uint{8 * jnp.dtype(dtype).itemsize}")
    return lax.bitcast_convert_type(fn(*(lax.bitcast_convert_type(x, uint) for x in arrays)),
                                    dtype)


def changed(got, want) -> int:
    return int(np.sum(np.asarray(got).view(np.uint16) != np.asarray(want).view(np.uint16)))


def main() -> int:
    cpu = jax.devices("cpu")[0]
    case = fp.make_case(1000445, 24)
    print(case.desc)
    want = case.ref(case.full, case.params)
    for name, impl in (("no barriers", on_bits_plain), ("library", LIBRARY)):
        _gather._on_bits = impl
        jax.clear_caches()
        got = fp.run_on(cpu, case.spec, case.args)
        print(f"  case, _on_bits {name:11s}: bf16 leaf {changed(got[1], want[1])} of "
              f"{want[1].size} differ")
    _gather._on_bits = LIBRARY
    jax.clear_caches()

    rng = np.random.default_rng(0)
    bits = rng.choice(np.array([0x0001, 0x0003, 0x0080, 0x8001, 0x7F81, 0x3F80], np.uint16),
                      size=(5, 257, 3))
    x = jax.device_put(bits.view(ml_dtypes.bfloat16), cpu)
    u = jax.device_put(bits, cpu)
    m = jax.device_put(np.zeros_like(bits), cpu)
    u16, bf16 = jnp.uint16, jnp.bfloat16
    # Arguments, not closed-over constants (XLA would fold those on the host).
    probes = {
        "bf16 -> u16, fused ^": lambda x, u, m: lax.bitcast_convert_type(x, u16) ^ m,
        "u16 ^ -> bf16": lambda x, u, m: lax.bitcast_convert_type(u ^ m, bf16),
        "bf16 -> u16 ^ -> bf16": lambda x, u, m: lax.bitcast_convert_type(
            lax.bitcast_convert_type(x, u16) ^ m, bf16),
        "u16 ^ -> bf16, transposed": lambda x, u, m: jnp.transpose(
            lax.bitcast_convert_type(u ^ m, bf16), (2, 1, 0)),
        "bf16 transposed": lambda x, u, m: jnp.transpose(x, (2, 1, 0)),
    }
    transposed = ("u16 ^ -> bf16, transposed", "bf16 transposed")
    for name, fn in probes.items():
        got = jax.jit(fn)(x, u, m)
        want_bits = bits.transpose(2, 1, 0) if name in transposed else bits
        print(f"  {name:28s} {changed(got, want_bits):6d} of {bits.size} differ")

    with jax.default_device(cpu):
        xs = jax.device_put(list(case.args), cpu)
        text = fp._JIT.lower(case.spec, *xs).compile().as_text()
    print("bf16 lines of the case's compiled program:")
    for line in text.splitlines():
        if "bf16" in line:
            print("   ", " ".join(line.split())[:200])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
