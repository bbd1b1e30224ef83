"""The lab of jax_mergepath: its benchmark (`python -m perf.bench`), GPU run scripts, kernel
sweeps and recorded results (perf/README.md). Never shipped in the wheel.

Contract: perf measures the INSTALLED jax_mergepath. Run from the repository root, Python puts
the root first on sys.path, where the package's source folder (no native modules unless built
in place) would shadow an installed wheel; so importing perf before jax_mergepath moves the root
to the end of sys.path: `perf` stays importable, `jax_mergepath` resolves to the installed
package (an editable install resolves to its build either way).
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the repository root

if "jax_mergepath" not in sys.modules:
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != ROOT] + [ROOT]
