"""Run settings: default sizes and timing knobs by device, the sizes of one run (`run_sizes`:
--max-log2, --min-log2 and --quick applied) and `Cfg`, the settings every timing reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Default sizes (log2) by device; --max-log2 caps them all, --quick trims them.
GPU_SIZES = {
    "max": 27, "sort": (20, 24, 27), "sort_by_key": 24, "lax_sort": 24, "rows": 26,
    "search": 23, "memory": 27, "batch": 26,
}
CPU_SIZES = {
    "max": 22, "sort": (16, 20), "sort_by_key": 22, "lax_sort": 20, "rows": 20,
    "search": 20, "memory": 20, "batch": 20,
}
GPU_TIMING = {"repeats": 10, "rounds": 3, "min_calls": 5, "max_batch_s": 0.3}
CPU_TIMING = {"repeats": 2, "rounds": 1, "min_calls": 2, "max_batch_s": 0.3}
ROW_WIDTHS = (64, 512, 4096)


@dataclass
class Cfg:
    platform: str  # "gpu" or "cpu"
    repeats: int
    calls: int
    min_calls: int
    rounds: int
    max_batch_s: float
    breakdown: bool = False
    copy_bps: float = 0.0
    torch: Any = None  # the torch module when used as a reference, else None
    torch_device: str = "cpu"
    search_compile_timeout: float = 60.0


def run_sizes(platform: str, max_log2: int | None, min_log2: int, quick: bool) -> dict:
    """The log2 sizes of one run: {"max", "sort": tuple, "merge": list, "sort_by_key", ...}."""
    base = dict(GPU_SIZES if platform == "gpu" else CPU_SIZES)
    top = base["max"] if max_log2 is None else max_log2
    out = {k: min(v, top) for k, v in base.items() if isinstance(v, int)}
    sort_sizes = {s for s in base["sort"] if s <= top}
    if max_log2 is not None or not sort_sizes:
        sort_sizes.add(top)
    if quick:
        sort_sizes = {min(20, top), max(sort_sizes)}
        if platform != "gpu":
            sort_sizes = {min(20, top)}
            for k in ("sort_by_key", "lax_sort", "rows", "search"):
                out[k] = min(out[k], 20)
    out["sort"] = tuple(sorted(sort_sizes))
    merge_top = top if (platform == "gpu" or max_log2 is not None) else min(top, 20)
    if quick:
        out["merge"] = sorted({min(20, merge_top), merge_top})
    else:
        out["merge"] = sorted({*range(min_log2, merge_top + 1, 2),
                               *([27] if merge_top >= 27 else [])})
    return out
