"""`python -m perf.bench [flags]`: the bench with 64-bit types on (int64 / float64
cases run); exit status 1 when a case failed. The flags: `--help`, or cli.py."""

import sys

import jax

from perf.bench.run import main

if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    sys.exit(main())
