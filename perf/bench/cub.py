"""The CUB peer (--cub): `run_cub` runs the program built from perf/cub_bench.cu (or reads
a text file of its output) and parses its `CUB <case> <n> <us>` lines into {(case, n): us};
`default_cub_args` gives it this run's sizes; `print_cub` prints what it said in the header."""

from __future__ import annotations

import os
import subprocess

from perf.bench.console import say


def default_cub_args(gpu_sizes: dict) -> list[str]:
    """Program arguments matching the run's sort, row and merge sizes (GPU defaults)."""
    return ["--sizes", ",".join(map(str, gpu_sizes["sort"])),
            "--seg-log2", str(gpu_sizes["rows"]), "--merge-log2", str(gpu_sizes["max"])]


def run_cub(path: str, extra: list[str]) -> tuple[dict, list[str]]:
    """Runs the CUB program (or reads a file of its output): {(case, n): us}, its other lines."""
    if os.access(path, os.X_OK) and not os.path.isdir(path):
        try:
            proc = subprocess.run([path, *extra], capture_output=True, text=True, timeout=900)
        except Exception as err:  # noqa: BLE001 - reported, the run goes on
            return {}, [f"# CUB program failed to run: {err}"]
        text = proc.stdout
        info = [] if proc.returncode == 0 else [
            f"# CUB program exit status {proc.returncode}: {proc.stderr.strip()[-400:]}"]
    else:
        with open(path) as fh:
            text, info = fh.read(), [f"# CUB results read from {path}"]
    times = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "CUB":
            try:
                times[(parts[1], int(parts[2]))] = float(parts[3])
            except ValueError:
                info.append(f"# unparsed: {line}")
        elif line.startswith("#"):
            info.append(line)
    return times, info


def print_cub(times: dict, info: list[str]) -> None:
    """The header's CUB lines: the program's comments, every timing, its memcpy rate."""
    if not (info or times):
        return
    for line in info:
        say(line)
    for (c, n), us in times.items():
        say(f"CUB {c} {n} {us:.3f}")
    memcpy = [(n, us) for (c, n), us in times.items() if c == "memcpy_d2d"]
    if memcpy:
        n, us = memcpy[0]
        say(f"CUB program's cudaMemcpy D2D: {2 * n / us / 1e6:.3f} TB/s "
            f"({len(times)} CUB timings)")


def cub_rows(times: dict) -> list[dict]:
    """The CUB timings as JSON rows, sorted by case and size."""
    return [{"case": c, "n": n, "us": us} for (c, n), us in sorted(times.items())]
