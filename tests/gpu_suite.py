"""The GPU tests, by one command on a GPU machine: every test marked `requires_gpu` (the GPU tier's
files, tests/test_*_gpu.py and test_cuda_graphs.py, and the GPU tests inside other files), then
a summary of passed / failed / skipped / errors per file. Exit status: pytest's (0: all passed),
2 when jax's default device is not a GPU or the CUDA module did not load (every test would skip).

    python tests/gpu_suite.py [pytest arguments...]     # from the repository root

Run as a script, its folder (tests/) comes first on sys.path, not the repository root, so the
installed (or editable) jax_mergepath is tested, never the unbuilt source folder. Extra arguments
go to pytest (`-x`, `-k merge`, `-n 8` with pytest-xdist, a file: `tests/test_sort_gpu.py`).
"""

from __future__ import annotations

import collections
import pathlib
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
OUTCOMES = ("passed", "failed", "skipped", "error")


class Summary:
    """A pytest plugin counting each test's outcome by file."""

    def __init__(self) -> None:
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        file = report.nodeid.split("::")[0]
        if report.when == "call":
            self.counts[file]["skipped" if report.skipped else report.outcome] += 1
        elif report.skipped:  # (skipped at setup: a skip marker)
            self.counts[file]["skipped"] += 1
        elif report.failed:  # (a fixture's setup or teardown failed)
            self.counts[file]["error"] += 1

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.counts[report.nodeid or "collection"]["error"] += 1

    def table(self) -> str:
        width = max([len(f) for f in self.counts] + [len("total")])
        lines = [f"{'file':<{width}}  " + "  ".join(f"{o:>7}" for o in OUTCOMES)]
        total: collections.Counter = collections.Counter()
        for file in sorted(self.counts):
            total.update(self.counts[file])
            lines.append(f"{file:<{width}}  "
                         + "  ".join(f"{self.counts[file][o]:>7}" for o in OUTCOMES))
        lines.append(f"{'total':<{width}}  " + "  ".join(f"{total[o]:>7}" for o in OUTCOMES))
        return "\n".join(lines)


def main(argv: list[str]) -> int:
    import jax

    import jax_mergepath as jmp

    devices = jax.devices()
    print(f"jax {jax.__version__}, devices {devices}, jax_mergepath {jmp.__version__} from "
          f"{pathlib.Path(jmp.__file__).parent}, CUDA module: {jmp.HAS_CUDA}")
    if devices[0].platform != "gpu" or not jmp.HAS_CUDA:
        print("gpu_suite: needs a GPU as jax's default device and the CUDA build "
              "(JMP_CUDA=ON, perf/gpu/install.sh); every GPU test would skip", file=sys.stderr)
        return 2
    summary = Summary()
    code = pytest.main([str(TESTS), "-m", "requires_gpu", "-q", "-p", "no:cacheprovider",
                        "--rootdir", str(TESTS.parent), *argv], plugins=[summary])
    print("\nGPU tests by file (python tests/gpu_suite.py):")
    print(summary.table())
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
