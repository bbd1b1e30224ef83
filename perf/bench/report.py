"""The printed report and the JSON file: `HEADER` and `print_rows` (a case's table lines, refs,
notes and, with --breakdown, our operations' kernel times), `print_summary` (one line a case),
and `write_json` ({"meta", "rows", "memory", "cub"}, the file --json writes and plot.py reads)."""

from __future__ import annotations

import json

from perf.bench.console import say


def fmt_t(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def _gbps(g: float) -> str:
    return f"{g:.0f}" if g >= 100 else f"{g:.1f}" if g >= 1 else f"{g:.3f}"


def _pct(p: float | None) -> str:
    return "-" if p is None else f"{p:.1f}%"


def _x(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s:.3g}x" if s < 0.1 else f"{s:.2f}x" if s < 10 else f"{s:.1f}x"


HEADER = (f"{'case':<46} {'user/call':>10} {'kernel':>10} {'GB/s':>7} {'%copy user':>10} "
          f"{'(kernel)':>9}  speedup user (kernel) vs baseline")


def _speedups(others: list[dict], brackets: bool) -> list[str]:
    """'1.23x (1.10x) name' per timed baseline / reference, its error text otherwise."""
    parts = []
    for b in others:
        if b["error"]:
            parts.append(f"{b['name']}: {b['error']}")
        else:
            tail = f" [{fmt_t(b['user_s'])}]" if brackets else ""
            parts.append(f"{_x(b['speedup'])} ({_x(b['speedup_kernel'])}) {b['name']}{tail}")
    return parts


def print_rows(rows: list[tuple[dict, dict]], breakdown: bool) -> None:
    """A case's lines: per (row, kernel-time breakdown) from case.run_case."""
    for row, ops in rows:
        if row["status"] != "ok":
            say(f"{row['case']:<46} "
                + row["status"].replace("CHECK FAILED: ", "CHECK FAILED (not timed): ", 1))
            continue
        _print_row(row, ops if breakdown else {})


def _print_row(row: dict, ops: dict) -> None:
    say(f"{row['case']:<46} {fmt_t(row['user_s']):>10} {fmt_t(row['kernel_s']):>10} "
        f"{_gbps(row['gbps']):>7} {_pct(row['pct_copy']):>10} ({_pct(row['pct_copy_kernel']):>6})  "
        + " | ".join(_speedups(row["baselines"], False)))
    extra = _speedups(row["references"], True)
    for c in row["cub"]:
        extra.append(f"{_x(c['speedup'])} ({_x(c['speedup_kernel'])}) CUB {c['name']} "
                     f"[{c['us']:.1f} us]")
    if extra:
        say(f"{'':<48}refs: " + " | ".join(extra))
    for note in row["notes"]:
        say(f"{'':<48}note: {note}")
    for name, s in sorted(ops.items(), key=lambda kv: -kv[1]):
        say(f"{'':<48}{s * 1e6:10.1f} us  {name[:90]}")


def print_note(note: str) -> None:
    say(f"{'':<48}note: {note}")


def print_summary(rows: list) -> None:
    say("\n== summary: user-visible time per call (kernel time); % of copy; speedup = baseline "
        "or reference time / ours")
    say(f"{'case':<48} {'ours user (kernel)':>22} {'%copy':>6}  {'best JAX baseline':<32} "
        f"{'speedup':>15}  {'torch':>6}  {'numpy':>6}  CUB (best)")
    for r in rows:
        if r.get("status") != "ok":
            say(f"{r['case']:<48} {r['status']}")
            continue
        times = f"{fmt_t(r['user_s'])} ({fmt_t(r['kernel_s'])})"
        sp = f"{_x(r['speedup_best'])} ({_x(r['speedup_best_kernel'])})"
        torch = next((x["speedup"] for x in r["references"] if x["name"].startswith("torch")
                      and not x["error"]), None)
        numpy = next((x["speedup"] for x in r["references"] if x["name"].startswith("np.")
                      and not x["error"]), None)
        cub = min(r["cub"], key=lambda c: c["us"], default=None)
        cub_s = f"{_x(cub['speedup'])} {cub['name']}" if cub else ""
        say(f"{r['case']:<48} {times:>22} {_pct(r['pct_copy']):>6}  "
            f"{(r['best_baseline'] or '-')[:32]:<32} {sp:>15}  {_x(torch):>6}  {_x(numpy):>6}  "
            f"{cub_s}")


def write_json(path: str, results: dict) -> None:
    with open(path, "w") as fh:
        json.dump(results, fh, indent=1)
    say(f"results written to {path}")
