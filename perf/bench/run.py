"""`main`: one bench run, in order: the subprocess work while this process holds no device
memory (the CUB program, peak memory), the header (device, torch, copy rates, dispatch floor,
timing, sizes), every case of the chosen families (progress on stderr, rows on stdout), the peak
memory and the summary, then the --json file and the --plot. Exit status 1 when a case failed."""

from __future__ import annotations

import glob
import json
import sys
import time

import jax

import jax_mergepath as jmp
from perf.bench.case import presorted_note, run_case
from perf.bench.cases_batch import batch_cases
from perf.bench.cases_merge import merge_cases
from perf.bench.cases_sort import sort_family
from perf.bench.cases_topk import topk_family
from perf.bench.cli import parse_args
from perf.bench.config import CPU_TIMING, GPU_SIZES, GPU_TIMING, Cfg, run_sizes
from perf.bench.console import Progress, say
from perf.bench.copyrate import copy_bandwidth, jax_copy_rate, jax_x_plus_1
from perf.bench.cub import cub_rows, default_cub_args, print_cub, run_cub
from perf.bench.memory import memory_child, peak_memory, print_memory
from perf.bench.report import (
    HEADER,
    fmt_t,
    print_note,
    print_rows,
    print_summary,
    write_json,
)


def _cfg(args, platform: str) -> Cfg:
    timing = GPU_TIMING if platform == "gpu" else CPU_TIMING
    return Cfg(
        platform=platform,
        repeats=args.repeats or timing["repeats"],
        calls=args.calls,
        min_calls=args.min_calls or timing["min_calls"],
        rounds=args.rounds or timing["rounds"],
        max_batch_s=args.max_batch_s or timing["max_batch_s"],
        breakdown=args.breakdown,
        search_compile_timeout=args.search_compile_timeout,
    )


def _torch(cfg: Cfg) -> None:
    """Sets cfg.torch when torch imports (and has CUDA on a GPU run): a reference only."""
    try:
        import torch

        cfg.torch_device = "cuda" if cfg.platform == "gpu" else "cpu"
        if cfg.torch_device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA")
        cfg.torch = torch
        say(f"torch {torch.__version__} on {cfg.torch_device}: reference only")
    except Exception as err:  # noqa: BLE001 - a reference only
        say(f"torch references skipped: {type(err).__name__}: {err}")


def _rates(cfg: Cfg) -> dict:
    """Measures and prints the copy rate (sets cfg.copy_bps), JAX's x + 1 and the dispatch floor;
    returns them for the JSON header."""
    cfg.copy_bps, copy_name = copy_bandwidth(cfg)
    say(f"copy: {cfg.copy_bps / 1e12:.3f} TB/s ({copy_name}, read + write counted): the "
        "ceiling of '% copy'")
    k_bps, u_bps = jax_copy_rate(cfg, 28 if cfg.platform == "gpu" else 24)
    say(f"JAX x + 1 for comparison: {k_bps / 1e12:.3f} TB/s kernel, {u_bps / 1e12:.3f} TB/s "
        "user-visible")
    floor = jax_x_plus_1(cfg, 10)
    say(f"dispatch floor: a jitted x + 1 on 1024 int32 takes {fmt_t(floor.user_s)} per call "
        f"user-visible ({fmt_t(floor.kernel_s)} kernel): about the floor of user-visible "
        "times")
    return {"copy_bps": cfg.copy_bps, "copy_method": copy_name,
            "jax_x_plus_1_bps": {"kernel": k_bps, "user": u_bps},
            "dispatch_floor_s": {"kernel": floor.kernel_s, "user": floor.user_s}}


def _run_cases(builders: list, cfg: Cfg, cub_times: dict, progress: Progress,
               only: list[str] | None = None) -> list:
    """Builds and runs each case in turn (only: those whose name contains one of these texts);
    returns every row (the JSON's "rows")."""
    rows: list = []
    family = None
    for fam, build in builders:
        t0 = time.perf_counter()
        case = build()
        if only and not any(text in case.name for text in only):
            del case
            continue
        if fam != family:
            family = fam
            say(f"\n== {fam} family\n{HEADER}")
        progress.start(case.name, t0)
        try:
            done = run_case(case, cfg, cub_times)
        except Exception as err:  # noqa: BLE001 - one broken case must not end the run
            progress.end("ERROR")
            say(f"{case.name:<46} ERROR: {type(err).__name__}: {str(err).splitlines()[0][:200]}")
            rows.append({"family": case.family, "case": case.name, "n": case.n,
                         "status": f"ERROR: {type(err).__name__}: {err}"[:400]})
        else:
            bad = [r["status"].split(":")[0] for r, _ in done if r["status"] != "ok"]
            progress.end(bad[0] if bad else "")
            print_rows(done, cfg.breakdown)
            rows += [r for r, _ in done]
        note = presorted_note(rows)
        if note:
            print_note(note)
        del case
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child, args.memory_log2 or GPU_SIZES["memory"])
        return 0
    if args.plot_from:
        from perf.bench.plot import plot_file

        plot_file(args.plot_from, args.plot)
        say(f"plot written to {args.plot}")
        return 0
    families = ("merge", "batch", "sort", "topk") if args.family == "all" else (args.family,)
    progress = Progress(0, enabled=not args.quiet)
    t_start = time.perf_counter()

    # Subprocess work first, while this process holds no device memory: CUB and peak memory
    # (they can only be a GPU's; the backend is not started yet, so ask the build).
    gpu_sizes = run_sizes("gpu", args.max_log2, args.min_log2, args.quick)
    cub_times: dict = {}
    cub_info: list[str] = []
    if args.cub:
        extra = (args.cub_args.split() if args.cub_args is not None else
                 default_cub_args(gpu_sizes))
        progress.start(f"CUB {args.cub}", counted=False)
        cub_times, cub_info = run_cub(args.cub, extra)
        progress.end()
    memory: list[dict] = []
    memory_log2 = min(args.memory_log2 or GPU_SIZES["memory"], gpu_sizes["max"])
    maybe_gpu = jmp.HAS_CUDA and bool(glob.glob("/dev/nvidia[0-9]*"))
    if "sort" in families and not args.no_memory and not args.quick and maybe_gpu:
        progress.start(f"peak memory of sorts of 2^{memory_log2} (subprocesses)", counted=False)
        memory = peak_memory(memory_log2)
        progress.end()

    dev = jax.devices()[0]
    cfg = _cfg(args, "gpu" if dev.platform == "gpu" else "cpu")
    sizes = run_sizes(cfg.platform, args.max_log2, args.min_log2, args.quick)
    say(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, jax_mergepath "
        f"{jmp.__version__} CUDA={jmp.HAS_CUDA}, x64={jax.config.jax_enable_x64}")
    if not args.no_torch and "sort" in families:
        _torch(cfg)
    rates = _rates(cfg)
    print_cub(cub_times, cub_info)
    say(f"timing: kernel = trace of {cfg.repeats} blocked calls per variant ("
        + ("kernels on the GPU's streams" if cfg.platform == "gpu"
           else "XLA thunks on host threads")
        + f"); user-visible = up to {cfg.calls} back-to-back calls (at least {cfg.min_calls}, "
        f"~{cfg.max_batch_s} s a batch) blocked once, median of {cfg.rounds}")
    say(f"sizes (log2): {json.dumps(sizes)}")

    builders: list = []
    if "merge" in families:
        builders += [("merge", b) for b in merge_cases(sizes["merge"], args.quick,
                                                       1 << sizes["max"])]
    if "batch" in families:
        builders += [("batch", b) for b in batch_cases(sizes["batch"], args.quick)]
    if "sort" in families:
        builders += [("sort", b) for b in sort_family(cfg, sizes, args.quick)]
    if "topk" in families:
        builders += [("topk", b) for b in topk_family(cfg.platform, sizes, args.quick)]
    progress.total = 0 if args.case else len(builders)
    rows = _run_cases(builders, cfg, cub_times, progress, args.case)
    if "sort" in families:
        if memory:
            print_memory(memory)
        elif cfg.platform == "gpu":
            say("== peak device memory: skipped (--no-memory, --quick or no CUDA build)")
        else:
            say("== peak device memory: skipped on the CPU (memory_stats() has no "
                "peak_bytes_in_use there)")
    print_summary(rows)
    elapsed = time.perf_counter() - t_start
    say(f"\ntotal {elapsed:.0f} s")
    meta = {
        "device": dev.device_kind, "platform": dev.platform, "jax": jax.__version__,
        "jax_mergepath": jmp.__version__, "has_cuda": jmp.HAS_CUDA, **rates,
        "timing": {"repeats": cfg.repeats, "calls": cfg.calls, "min_calls": cfg.min_calls,
                   "rounds": cfg.rounds, "max_batch_s": cfg.max_batch_s},
        "sizes": sizes, "argv": sys.argv[1:] if argv is None else argv,
        "elapsed_s": elapsed,
    }
    results = {"meta": meta, "rows": rows, "memory": memory, "cub": cub_rows(cub_times)}
    if args.json:
        write_json(args.json, results)
    status = 1 if any(r.get("status") != "ok" for r in rows) else 0
    if args.plot:
        from perf.bench.plot import plot_results

        try:
            plot_results(results, args.plot)
            say(f"plot written to {args.plot}")
        except Exception as err:  # noqa: BLE001 - the tables and JSON are out already
            say(f"plot failed: {type(err).__name__}: {err}")
            status = 1
    return status
