# GPU only: the CUDA handlers are marked command-buffer compatible, so XLA captures them into
# CUDA graphs (merges, and sorts on the radix path); results inside a graph must equal eager
# results. Runs in a subprocess because
# XLA_FLAGS are read once, when the GPU backend starts.
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.requires_gpu  # the GPU tier: skipped without a GPU

SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    import jax_mergepath as jmp
    assert jax.devices()[0].platform == "gpu"
    rng = np.random.default_rng(0)
    a = np.sort(rng.integers(0, 1000, (4, 40000)), -1).astype(np.int32)
    b = np.sort(rng.integers(0, 1000, (4, 30000)), -1).astype(np.int32)

    def step(a, b):
        out, idx = jmp.merge(a, b, return_indices=True)
        k, v = jmp.merge_by_key(a, b, a.astype(jnp.float32), b.astype(jnp.float32))
        ok = jmp.is_sorted(out)
        return out + 1, idx, v * 2, ok

    graph = jax.jit(step)(a, b)
    want_out = np.sort(np.concatenate([a, b], -1), -1, kind="stable")
    assert np.array_equal(np.asarray(graph[0]), want_out + 1)
    perm = np.argsort(np.concatenate([a, b], -1), -1, kind="stable")
    assert np.array_equal(np.asarray(graph[1]), perm)
    assert np.array_equal(np.asarray(graph[2]), 2 * want_out.astype(np.float32))
    assert bool(np.all(np.asarray(graph[3])))

    # the sort's radix path (CUB, its memsets and our kernels) captured too: 1-D, >= 2^20 keys
    c = rng.integers(-(2**31), 2**31, 2**20 + 3).astype(np.int32)
    f = rng.standard_normal(2**20 + 3).astype(np.float32)
    f[::97] = -0.0
    sorts = jax.jit(lambda c, f: (jmp.sort(c), jmp.argsort(f), jmp.sort(f)))(c, f)
    assert np.array_equal(np.asarray(sorts[0]), np.sort(c))
    assert np.array_equal(np.asarray(sorts[1]), np.argsort(f, kind="stable"))
    want = f[np.argsort(f, kind="stable")]
    assert np.array_equal(np.asarray(sorts[2]).view(np.uint32), want.view(np.uint32))
    print("GRAPH OK")
    """
)


def test_merges_and_sorts_inside_cuda_graphs():
    env = dict(os.environ)
    env["XLA_FLAGS"] = (
        env.get("XLA_FLAGS", "")
        + " --xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
    )
    # (run from tests/: `python -c` puts its working directory first on sys.path, and the
    # repository root's jax_mergepath is the unbuilt source folder where the package is installed)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600,
        cwd=pathlib.Path(__file__).parent,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "GRAPH OK" in proc.stdout
