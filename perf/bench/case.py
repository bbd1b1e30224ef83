"""A benchmark case and how one runs: `run_case` compiles every variant, checks ours against each
baseline (and references against ours), times what agrees (kernel and user-visible) and returns
one result row per variant of ours (the dicts written to --json), each with its kernel-time
breakdown by operation name; a case that fails its checks gives one "CHECK FAILED" row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from perf.bench.checks import check_all
from perf.bench.config import Cfg
from perf.bench.timing import (
    Variant,
    first_call,
    host_kernel_time,
    kernel_times,
    user_time,
)
from perf.bench.trace import named_jit


@dataclass(eq=False)
class Case:
    family: str
    name: str
    n: int
    nbytes: int
    ours: list[Variant]
    baselines: list[Variant]
    refs: list[Variant] = field(default_factory=list)
    cub: list[str] = field(default_factory=list)  # CUB case names (at size n) to compare with
    pre_check: Callable | None = None  # extra check (e.g. NaN data): () -> mismatch text or None
    notes: list[str] = field(default_factory=list)


def _problems(case: Case) -> tuple[list[str], object]:
    """First calls and checks of ours against every baseline: (mismatch texts, ours' output)."""
    problems = []
    if case.pre_check is not None:
        msg = case.pre_check()
        if msg:
            problems.append(msg)
    outs = {}
    for v in case.ours + case.baselines:
        out = first_call(v)
        if v.error and v in case.ours:
            problems.append(f"{v.label} {v.error}")
        outs[id(v)] = out
    for o in case.ours:
        if o.error:
            continue
        for b in case.baselines:
            if b.error:
                continue
            msg = (b.check or check_all)(outs[id(o)], outs[id(b)])
            if msg:
                problems.append(f"{o.label} vs {b.label}: {msg}")
    return problems, outs.get(id(case.ours[0]))


def run_case(case: Case, cfg: Cfg, cub: dict) -> list[tuple[dict, dict]]:
    """Checks, then times the case: [(row, our kernel-time breakdown {op name: s})]."""
    jax_variants = [v for v in case.ours + case.baselines if v.kind == "jax"]
    for v in jax_variants:
        v.f, v.tag = named_jit(v.fn)
    problems, ours_out = _problems(case)
    if problems:
        return [({"family": case.family, "case": case.name, "n": case.n,
                  "status": "CHECK FAILED: " + "; ".join(problems)}, {})]
    for r in case.refs:  # references: checked against ours, timed only when they agree
        if r.error:
            continue
        r.f = r.fn
        out = first_call(r)
        if r.error is None and ours_out is not None:
            msg = (r.check or check_all)(ours_out, out)
            if msg:
                r.error = f"mismatch ({msg}): not timed"
        del out
    del ours_out
    live = [v for v in jax_variants if v.error is None]
    kernel_times(live, cfg)
    for v in live:
        user_time(v, cfg)
    for r in case.refs:
        if r.error is None:
            host_kernel_time(r, cfg)
            user_time(r, cfg)
    return [(make_row(case, o, cfg, cub), o.breakdown) for o in case.ours]


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _timed(v: Variant, o: Variant) -> dict:
    return {"name": v.label, "user_s": v.user_s, "kernel_s": v.kernel_s, "calls": v.calls,
            "speedup": _ratio(v.user_s, o.user_s),
            "speedup_kernel": _ratio(v.kernel_s, o.kernel_s)}


def make_row(case: Case, o: Variant, cfg: Cfg, cub: dict) -> dict:
    """The result row of our variant o (every baseline, reference and CUB time beside it)."""
    label = f" {o.label}" if len(case.ours) > 1 else ""
    copy = cfg.copy_bps
    row = {
        "family": case.family,
        "case": case.name + label,
        "n": case.n,
        "bytes": case.nbytes,
        "ours": o.label,
        "user_s": o.user_s,
        "kernel_s": o.kernel_s,
        "kernel_method": o.kernel_method,
        "calls": o.calls,
        "first_call_s": o.first_s,
        "gbps": case.nbytes / o.user_s / 1e9,
        "gbps_kernel": case.nbytes / o.kernel_s / 1e9,
        "pct_copy": 100 * case.nbytes / o.user_s / copy if copy else None,
        "pct_copy_kernel": 100 * case.nbytes / o.kernel_s / copy if copy else None,
        "baselines": [],
        "references": [],
        "cub": [],
        "notes": list(case.notes),
        "status": "ok",
    }
    for b in case.baselines:
        t = _timed(b, o)
        row["baselines"].append({
            "name": t["name"], "user_s": t["user_s"], "kernel_s": t["kernel_s"],
            "calls": t["calls"], "kernel_method": b.kernel_method, "speedup": t["speedup"],
            "speedup_kernel": t["speedup_kernel"], "first_call_s": b.first_s, "error": b.error,
        })
    timed = [b for b in row["baselines"] if b["speedup"]]
    best = min(timed, key=lambda b: b["user_s"]) if timed else None
    row["best_baseline"] = best["name"] if best else None
    row["speedup_best"] = best["speedup"] if best else None
    row["speedup_best_kernel"] = best["speedup_kernel"] if best else None
    for r in case.refs:
        row["references"].append({**_timed(r, o), "error": r.error})
    for name in case.cub:
        us = cub.get((name, case.n))
        if us is not None:
            row["cub"].append({"name": name, "us": us, "speedup": us * 1e-6 / o.user_s,
                               "speedup_kernel": us * 1e-6 / o.kernel_s})
    return row


def presorted_note(rows: list) -> str | None:
    """Adds ours_random / ours_presorted to the last row when it is a presorted sort (the random
    sort of the same size and dtype ran before it); returns the note added, if any."""
    r = rows[-1] if rows else {}
    if r.get("status") == "ok" and r["case"].endswith(" presorted"):
        by_case = {x["case"]: x for x in rows if x.get("status") == "ok"}
        rnd = by_case.get(r["case"].removesuffix(" presorted"))
        if rnd:
            r["random_over_presorted"] = rnd["user_s"] / r["user_s"]
            r["random_over_presorted_kernel"] = rnd["kernel_s"] / r["kernel_s"]
            note = (f"ours random / ours presorted = {r['random_over_presorted']:.2f}x user "
                    f"({r['random_over_presorted_kernel']:.2f}x kernel)")
            r["notes"].append(note)
            return note
    return None
