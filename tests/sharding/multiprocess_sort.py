"""Sorts and merges over the devices of several processes (jax.distributed): one process per GPU
on a GPU host, or processes of several CPU devices (test_sharded_axis.py runs 2 of 4). A global
array split over all devices is sorted and merged by unchanged user code under jax.jit, on
explicit mesh axes and on auto ones (jax.sharding.Mesh), eagerly, and inside a shard_map
(``axis_name=``); each process checks its addressable shards against numpy's stable sort of the
full (seeded) data, bit for bit. Each process prints ``ok <case>`` or ``BAD <case>: why`` per
case and exits non-zero on any failure; the launcher exits non-zero if any process does.

    # launcher: 4 processes of one GPU each (a 4-GPU host; CUDA build of the package)
    python tests/sharding/multiprocess_sort.py --launch 4 --gpu
    # launcher: 2 processes of 4 CPU devices each (gloo collectives)
    python tests/sharding/multiprocess_sort.py --launch 2 --local-devices 4
    # one process (what the launcher starts)
    python tests/sharding/multiprocess_sort.py --process-id I --processes N --port P ...

``--plain``: only the plain-jax plumbing (a cross-process psum and all_to_all), no jax_mergepath.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable

PROCESS_TIMEOUT = 400  # s, each process (launcher)
PER_DEVICE = 3000  # keys a device


def launch(args: argparse.Namespace) -> int:
    """Starts args.launch processes of this script on localhost; their outputs, and 1 if any
    failed or timed out (killing the rest)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for i in range(args.launch):
        env = dict(os.environ)
        if args.gpu:  # one GPU a process
            env.update(CUDA_VISIBLE_DEVICES=str(i), JAX_PLATFORMS="cuda")
        else:
            env.update(XLA_FLAGS=f"--xla_force_host_platform_device_count={args.local_devices}",
                       JAX_PLATFORMS="cpu")
        env.pop("JAX_ENABLE_X64", None)
        cmd = [sys.executable, __file__, "--process-id", str(i), "--processes", str(args.launch),
               "--port", str(port), "--local-devices", str(1 if args.gpu else args.local_devices),
               *(["--plain"] if args.plain else [])]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    failed = 0
    try:
        for i, p in enumerate(procs):
            out, _ = p.communicate(timeout=PROCESS_TIMEOUT)
            print(f"---- process {i} (exit {p.returncode})\n{out}", flush=True)
            failed += p.returncode != 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
                failed += 1
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launch", type=int, default=0, help="start this many processes")
    parser.add_argument("--gpu", action="store_true", help="one GPU a process")
    parser.add_argument("--process-id", type=int, default=0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--local-devices", type=int, default=4)
    parser.add_argument("--plain", action="store_true")
    args = parser.parse_args()
    if args.launch:
        return launch(args)
    return run(args)


def run(args: argparse.Namespace) -> int:
    import jax

    if jax.config.jax_platforms == "cpu" or os.environ.get("JAX_PLATFORMS") == "cpu":
        try:  # the CPU's cross-process collectives (gloo); the option's name varies by version
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
        except Exception as e:  # noqa: BLE001
            print(f"note: no gloo option ({e})")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{args.port}",
                               num_processes=args.processes, process_id=args.process_id)
    from multiprocess_checks import Checks  # (after jax.distributed.initialize)

    g = args.processes * args.local_devices
    assert jax.process_count() == args.processes, jax.process_count()
    assert jax.device_count() == g and jax.local_device_count() == args.local_devices, (
        jax.devices())
    checks = Checks(g, args.local_devices, g * PER_DEVICE, args.process_id)
    failures = []

    def case(name: str, fn: Callable[[], str | None]) -> None:
        t0 = time.perf_counter()
        try:
            note = fn()
        except Exception as e:  # noqa: BLE001 - every failure is reported, the script goes on
            failures.append(name)
            msg = "".join(traceback.format_exception_only(type(e), e)).strip()
            print(f"BAD {name}: {msg.replace(chr(10), ' | ')[:1500]}", flush=True)
            if not isinstance(e, AssertionError):
                traceback.print_exc(limit=-4, file=sys.stdout)
            return
        note = f": {note}" if note else ""
        print(f"ok {name}{note} ({time.perf_counter() - t0:.1f} s)", flush=True)

    for name, fn in checks.cases(plain=args.plain):
        case(f"process {args.process_id}: {name}", fn)
    print(f"process {args.process_id}: {len(failures)} failed", flush=True)
    jax.distributed.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
