"""Throughput plot of a bench run. `plot_results(results, path)` draws, from the dict that --json
writes, one panel per case (its size written 2^k): GB/s (user-visible time; bytes: every input
read once, every output written once) against the size n on a log2 axis (batch cases: against
the row width d, at their one total size); ours solid, the JAX
baselines dashed, references (torch, numpy, CUB) dotted; the copy rate measured in the same run
as a horizontal line (the ceiling); the device in the title. matplotlib (optional: `pip install
matplotlib`) is imported here only, drawing with its Agg backend (no display).

    python -m perf.bench.plot results.json out.png
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections import defaultdict

from perf.bench.cli import PLOT_EXTRA, have_matplotlib

STYLES = {  # kind: (line style, marker, line width)
    "ours": ("-", "o", 2.0),
    "baseline": ("--", "s", 1.2),
    "reference": (":", "^", 1.2),
}
OURS_COLOR = "C3"
OTHER_COLORS = [f"C{i}" for i in range(10) if i != 3]


ROWS = re.compile(r" as \d+ x \((\d+)\+(\d+)\)")  # a batch case: rows of (d + d)


def panel_and_x(row: dict) -> tuple[str, int]:
    """The case's panel and its x: its size n ('sort int32 2^20' -> 'sort int32 2^k'), or, for a
    batch of rows at one total size, the row width d ('... 2^26 as 8192 x (4096+4096)' ->
    '... 2^26, rows of d + d')."""
    rows = ROWS.search(row["case"])
    if rows:
        return ROWS.sub(", rows of d + d", row["case"]), int(rows.group(1))
    lg = row["n"].bit_length() - 1
    return re.sub(rf"(?<![\d^])2\^{lg}(?!\d)", "2^k", row["case"]), row["n"]


def series(rows: list[dict]) -> dict:
    """{panel: {(kind, label): {n: GB/s}}} of the rows that ran, panels in run order."""
    panels: dict = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        if row.get("status") != "ok":
            continue
        panel, n = panel_and_x(row)
        lines = panels[panel]
        nbytes = row["bytes"]
        lines[("ours", row["ours"])][n] = nbytes / row["user_s"] / 1e9
        others = [("baseline", b) for b in row["baselines"]]
        others += [("reference", r) for r in row["references"]]
        for kind, o in others:
            if o.get("user_s") and not o.get("error"):
                lines[(kind, o["name"])][n] = nbytes / o["user_s"] / 1e9
        for c in row["cub"]:
            lines[("reference", f"CUB {c['name']} (kernel)")][n] = nbytes / (c["us"] * 1e-6) / 1e9
    return panels


def _figure(n_panels: int):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ncols = min(4, n_panels)
    nrows = math.ceil(n_panels / ncols)
    fig = Figure(figsize=(4.4 * ncols, 3.2 * nrows + 1.0), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes


def plot_results(results: dict, path: str) -> None:
    """Writes the plot of `results` (the --json dict) to `path` (PNG, or any matplotlib format)."""
    if not have_matplotlib():
        raise ModuleNotFoundError(f"plotting needs matplotlib: {PLOT_EXTRA}")
    from matplotlib.ticker import FixedLocator, NullLocator

    meta = results["meta"]
    panels = series(results["rows"])
    if not panels:
        raise ValueError("no case in the results ran: nothing to plot")
    fig, axes = _figure(len(panels))
    colors: dict = {}
    copy_gbps = (meta.get("copy_bps") or 0) / 1e9
    for ax, (name, lines) in zip(axes, panels.items(), strict=False):
        sizes = sorted({n for pts in lines.values() for n in pts})
        for (kind, label), pts in lines.items():
            style, marker, width = STYLES[kind]
            if kind == "ours":  # ours in one color everywhere, the others by name
                color = OURS_COLOR
            else:
                color = colors.setdefault(label, OTHER_COLORS[len(colors) % len(OTHER_COLORS)])
            ns = sorted(pts)
            ax.plot(ns, [pts[n] for n in ns], linestyle=style, marker=marker, linewidth=width,
                    markersize=4, color=color, label=label)
        if copy_gbps:
            ax.axhline(copy_gbps, color="black", linestyle="-.", linewidth=1.0,
                       label=f"copy {copy_gbps:.3g} GB/s")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(sizes))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([f"$2^{{{n.bit_length() - 1}}}$" for n in sizes])
        if len(sizes) == 1:
            ax.set_xlim(sizes[0] / 2, sizes[0] * 2)
        ax.set_title(name, fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=6.5, loc="best")
    fig.suptitle(
        f"{meta.get('device', '?')} ({meta.get('platform', '?')}): jax_mergepath "
        f"{meta.get('jax_mergepath', '?')} vs JAX baselines, jax {meta.get('jax', '?')}\n"
        f"throughput per call (user-visible); dash-dot: copy in the same run "
        f"({meta.get('copy_method', '?')}), the ceiling", fontsize=11)
    fig.supxlabel("size n (elements; batch panels: row width d), log2 axis", fontsize=10)
    fig.supylabel("GB/s (inputs read + outputs written once) / user-visible time", fontsize=10)
    fig.savefig(path, dpi=100)


def plot_file(json_path: str, path: str) -> None:
    """Plots a results file written by `python -m perf.bench --json`."""
    with open(json_path) as fh:
        plot_results(json.load(fh), path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m perf.bench.plot",
        description="Plot a bench results file (--json) as throughput against size.")
    p.add_argument("results", help="JSON file written by python -m perf.bench --json")
    p.add_argument("out", help="image to write (PNG)")
    args = p.parse_args(argv)
    if not have_matplotlib():
        p.error(f"plotting needs matplotlib, which is not installed: {PLOT_EXTRA}")
    plot_file(args.results, args.out)
    print(f"plot written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
