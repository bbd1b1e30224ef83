"""The command line of `python -m perf.bench`: `build_parser` (every flag, its default)
and `parse_args`, which also refuses, at argument time, what cannot run: --plot without
matplotlib, --plot-from without --plot."""

from __future__ import annotations

import argparse
import importlib.util

from perf.bench.config import CPU_TIMING, GPU_TIMING
from perf.bench.memory import MEMORY_VARIANTS

PLOT_EXTRA = 'pip install matplotlib'


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perf.bench",
        description="Benchmark jax_mergepath against JAX baselines (and torch / numpy / CUB "
                    "references): checks every result, then times kernel and user-visible time.")
    p.add_argument("--family", choices=("merge", "batch", "sort", "topk", "all"), default="all",
                   help="which cases: merge (merge, merge_by_key), batch (vmapped merges of "
                        "many rows, full and ragged), sort (sort, argsort, sort_by_key, "
                        "lax_sort, row sorts, searchsorted, peak memory), topk (top_k against "
                        "lax.top_k and sorts, with the thresholds' forced routes) or all "
                        "(default: all)")
    p.add_argument("--case", action="append", default=None, metavar="TEXT",
                   help="run only the cases whose name contains TEXT (repeatable: any of them; "
                        "the others are built, then skipped)")
    p.add_argument("--quick", action="store_true", default=False,
                   help="a short run: int32 (and float32 sorts) only, 2^20 and the largest "
                        "size, one row width, no peak memory (default: off)")
    p.add_argument("--min-log2", type=int, default=16,
                   help="smallest log2 size of the merge cases (default: 16)")
    p.add_argument("--max-log2", type=int, default=None,
                   help="largest log2 size of any case (default: by device: 27 on a GPU; 22 on "
                        "the CPU, whose defaults are merges up to 2^20, sorts at 2^16 and 2^20, "
                        "sort_by_key at 2^22, the rest at 2^20)")
    p.add_argument("--repeats", type=int, default=None,
                   help="profiler-traced calls per variant for the kernel time (default: "
                        f"{GPU_TIMING['repeats']} on a GPU, {CPU_TIMING['repeats']} on the CPU)")
    p.add_argument("--calls", type=int, default=50,
                   help="back-to-back calls per batch for the user-visible time, fewer when a "
                        "batch would exceed --max-batch-s (default: 50)")
    p.add_argument("--min-calls", type=int, default=None,
                   help="fewest calls per batch (default: "
                        f"{GPU_TIMING['min_calls']} on a GPU, {CPU_TIMING['min_calls']} on the "
                        "CPU)")
    p.add_argument("--max-batch-s", type=float, default=None,
                   help="seconds a batch of back-to-back calls should last at most (default: "
                        f"{GPU_TIMING['max_batch_s']} on a GPU, {CPU_TIMING['max_batch_s']} on "
                        "the CPU)")
    p.add_argument("--rounds", type=int, default=None,
                   help="batches per variant, the median is reported (default: "
                        f"{GPU_TIMING['rounds']} on a GPU, {CPU_TIMING['rounds']} on the CPU)")
    p.add_argument("--breakdown", action="store_true", default=False,
                   help="print our operations' kernel times by name (default: off)")
    p.add_argument("--no-torch", action="store_true", default=False,
                   help="skip the torch references even when torch imports (default: use it)")
    p.add_argument("--no-memory", action="store_true", default=False,
                   help="skip the peak-memory subprocesses of the sort family (default: run "
                        "them on a GPU)")
    p.add_argument("--search-compile-timeout", type=float, default=60.0,
                   help="seconds allowed to compile jnp.searchsorted(method='scan_unrolled'); "
                        "skipped beyond (default: 60)")
    p.add_argument("--cub", metavar="PATH", default=None,
                   help="CUB peer: the program built from perf/cub_bench.cu (run before "
                        "JAX starts) or a text file of its output; CUB ratios are printed for "
                        "the matching cases (default: none)")
    p.add_argument("--cub-args", default=None,
                   help="arguments for the CUB program (default: sizes matching this run's "
                        "sort, row and merge cases)")
    p.add_argument("--json", metavar="FILE", default=None,
                   help="write the results (one dict per case, plus the run's header) as JSON "
                        "(default: none)")
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="draw throughput (GB/s, user-visible) against size, one panel per case, "
                        "ours and every baseline / reference as lines, the run's copy rate as "
                        f"the ceiling; needs matplotlib: {PLOT_EXTRA} (default: none)")
    p.add_argument("--plot-from", metavar="RESULTS.json", default=None,
                   help="with --plot: draw the plot from a file written by --json (e.g. on a "
                        "GPU machine) instead of running the bench (default: none)")
    p.add_argument("--quiet", action="store_true", default=False,
                   help="no progress lines on stderr (default: one line per case, "
                        "'[3/27] sort int32 2^20 ... 0.41 s')")
    p.add_argument("--memory-child", choices=tuple(MEMORY_VARIANTS), default=None,
                   help="internal: measure one variant's peak memory in this process and exit "
                        "(default: off)")
    p.add_argument("--memory-log2", type=int, default=None,
                   help="log2 size of the peak-memory sorts (default: 27 on a GPU, capped by "
                        "--max-log2)")
    return p


def have_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.plot_from and not args.plot:
        parser.error("--plot-from needs --plot OUT.png")
    if args.plot and not have_matplotlib():
        parser.error(f"--plot needs matplotlib, which is not installed: {PLOT_EXTRA}")
    return args
