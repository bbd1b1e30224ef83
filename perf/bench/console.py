"""The run's two output streams. `say` prints the report (tables, header, notes) to stdout, as it
always did; `Progress` prints one line per case to stderr, `[3/27] sort int32 2^20 ... 0.41 s`,
started when the case starts and finished when it ends (off with --quiet). A `say` while a
progress line is open ends that line first, so neither stream's lines are cut."""

from __future__ import annotations

import sys
import time
from typing import Any

_open: list = []  # the Progress whose stderr line is open (at most one)


def say(*parts: Any) -> None:
    if _open:
        _open[0].break_line()
    print(*parts, flush=True)


class Progress:
    """Progress lines on stderr for `total` cases (0: unknown); does nothing when not enabled."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total, self.enabled = total, enabled
        self.index = 0
        self.label = ""
        self.t0 = 0.0
        self.broken = False

    def start(self, label: str, t0: float | None = None, counted: bool = True) -> None:
        """Opens the line of a case (counted: numbered i/total) or of a setup step."""
        if counted:
            self.index += 1
        total = self.total or "?"  # 0: not known (a --case filter skips cases as they are built)
        self.label = f"[{self.index}/{total}] {label}" if counted else f"[setup] {label}"
        self.t0 = time.perf_counter() if t0 is None else t0
        self.broken = False
        if self.enabled:
            self._write(f"{self.label} ... ")
            _open[:] = [self]

    def break_line(self) -> None:
        """Ends the open line early (other output follows); end() then writes it whole."""
        self._write("\n")
        self.broken = True
        _open.clear()

    def end(self, status: str = "") -> None:
        if not self.enabled:
            return
        took = f"{time.perf_counter() - self.t0:.2f} s" + (f" {status}" if status else "")
        self._write(f"{self.label} ... {took}\n" if self.broken else f"{took}\n")
        _open.clear()

    @staticmethod
    def _write(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()
