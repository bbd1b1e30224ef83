"""Benchmark of jax_mergepath against what JAX users write today, family by family.

    python -m perf.bench [--family merge|batch|sort|topk|all] [--quick] [--cub PATH] [--json FILE]
                                  [--plot FILE.png] [--quiet]
    python -m perf.bench.plot results.json out.png    # re-plot a saved --json file

Every case first checks its result on fresh random data against each baseline (integers
bit-equal; floats equal as values, any NaN equal to any NaN; argsort indices exactly), then
times every variant two ways, in the same run on the same device:

  user-visible: wall time per call of --calls back-to-back calls of the jitted function, blocked
      once at the end (launches, gaps, extra kernels and host work included), the median of
      --rounds such batches. GB/s, "% copy" and speedups are headlined with this time.
  kernel: busy time of the variant's own XLA operations in a profiler trace of --repeats
      blocked calls, per call: on a GPU its kernels and copies on the device's streams, on the
      CPU its XLA thunks on host threads (the union of their intervals, matched to the variant
      by the trace's hlo_module stat).

Bytes: every input read once, every output written once. "% copy" compares with a copy measured
in the same run: cudaMemcpy device to device (through CuPy) on a GPU, numpy's copyto on the CPU
(the header says which). Speedups are baseline time / our time (> 1: we are faster).

Baselines are JAX idioms: jnp.sort(concatenate) and a searchsorted + scatter merge, lax.sort,
jnp.sort, jnp.argsort(stable=True), jnp.searchsorted (each method); for top_k: lax.top_k, a
descending sort then a slice (jnp.sort, jmp.sort) and jnp.argsort then a take. References, same
device, not baselines: torch.sort (when torch imports), numpy's stable sorts (CPU), CUB (--cub,
GPU), lax.approx_max_k (timed, not checked: it is approximate).

The report goes to stdout; one progress line per case to stderr (--quiet: none).

Modules: __main__ (entry), cli (flags), run (the run's order), config (sizes, timing knobs),
cases_merge / cases_batch / cases_sort / cases_topk (the cases), case (check, time, result
rows), checks, data, timing and trace (user-visible and kernel times), copyrate, memory (peak
memory), cub (CUB peer), console (stdout report, stderr progress), report (tables, JSON), plot
(matplotlib, optional).
"""


def main(argv: list[str] | None = None) -> int:
    """Runs the bench with these command-line arguments (see `--help`); returns the exit status."""
    from perf.bench.run import main as run_main

    return run_main(argv)
