"""An event queue kept sorted across steps: merge the new events in instead of re-sorting.

A discrete-event simulation keeps its pending events sorted by time in a buffer of fixed
capacity (times + event ids). Every step takes the `batch` earliest events out and processes
them: each schedules one new event a random delay later (the "hold" model of priority-queue
benchmarks, a batch at a time). The new events are sorted (`jmp.sort_by_key`, a small sort) and
merged into the rest of the buffer with `jmp.merge_by_key`, one pass over the buffer; the
jnp-only version concatenates and re-sorts the whole buffer with `jax.lax.sort` every step.
Times are integer ticks: ties are common, and both versions order them the same way (stable:
older events first), so the script asserts that every step's processed events and the final
buffer are identical, then times the two scans.

    python examples/sorted_stream.py                 # small: a 16 Ki-event queue on a CPU
    python examples/sorted_stream.py --size gpu      # 16 Mi pending events, 64 Ki per step
    python examples/sorted_stream.py --capacity 1000000 --batch 1000 --steps 100
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from _common import Checks, compare_stage, compare_timings, header, make_parser, resolve, result
from jax import lax

import jax_mergepath as jmp

SIZES = {
    "small": {"capacity": 2**14, "batch": 2**8, "steps": 64, "reps": 10},
    "gpu": {"capacity": 2**24, "batch": 2**16, "steps": 32, "reps": 10},
}
DELAY_BITS = 16  # delays are uniform in 1 .. 2**DELAY_BITS ticks

Queue = tuple[jax.Array, jax.Array, jax.Array]  # times (capacity,), ids (capacity,), next id
Insert = Callable[[jax.Array, jax.Array, jax.Array, jax.Array], tuple[jax.Array, jax.Array]]


def jmp_insert(times: jax.Array, ids: jax.Array, new_times: jax.Array,
               new_ids: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Sort the (small) batch, then one stable merge: the buffer's events before equal-time
    new ones."""
    new_times, new_ids = jmp.sort_by_key(new_times, new_ids)
    return jmp.merge_by_key(times, new_times, ids, new_ids)


def jnp_insert(times: jax.Array, ids: jax.Array, new_times: jax.Array,
               new_ids: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Append and re-sort everything (stable, so equal times keep the same order)."""
    return lax.sort((jnp.concatenate([times, new_times]), jnp.concatenate([ids, new_ids])),
                    num_keys=1, is_stable=True)  # type: ignore[return-value]


def step(queue: Queue, key: jax.Array, *, batch: int,
         insert: Insert) -> tuple[Queue, tuple[jax.Array, jax.Array]]:
    """Take the `batch` earliest events out; each schedules a new event a random delay later."""
    times, ids, next_id = queue
    now_times, now_ids = times[:batch], ids[:batch]
    delay = 1 + (jax.random.bits(key, (batch,), jnp.uint32) >> (32 - DELAY_BITS))
    new_times = now_times + delay.astype(jnp.int32)
    new_ids = next_id + jnp.arange(batch, dtype=jnp.int32)
    times, ids = insert(times[batch:], ids[batch:], new_times, new_ids)
    return (times, ids, next_id + batch), (now_times, now_ids)


def run(queue: Queue, key: jax.Array, *, steps: int, batch: int,
        insert: Insert) -> tuple[Queue, tuple[jax.Array, jax.Array]]:
    """`steps` steps in one scan: the final queue and every step's processed events."""
    keys = jax.random.split(key, steps)
    return lax.scan(partial(step, batch=batch, insert=insert), queue, keys)


def initial_queue(rng: np.random.Generator, capacity: int) -> Queue:
    """`capacity` pending events at random times (sorted once, outside the timed steps)."""
    # Spread over one maximal delay, as in the steady state (pending events lie between now
    # and now + 2**DELAY_BITS).
    times = np.sort(rng.integers(0, 2**DELAY_BITS, capacity)).astype(np.int32)
    return jnp.asarray(times), jnp.arange(capacity, dtype=jnp.int32), jnp.int32(capacity)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__, SIZES)
    parser.add_argument("--capacity", type=int, help="pending events kept in the queue")
    parser.add_argument("--batch", type=int, help="events processed (and scheduled) per step")
    parser.add_argument("--steps", type=int, help="steps per scan")
    args = resolve(parser.parse_args(argv), SIZES)
    if not 1 <= args.batch < args.capacity or args.steps < 1:
        parser.error("need 1 <= --batch < --capacity and --steps >= 1")
    # Each step raises the latest time by at most 2**DELAY_BITS; ids count up by batch.
    if (args.steps + 1) * 2**DELAY_BITS >= 2**31 or (
        args.capacity + args.steps * args.batch >= 2**31
    ):
        parser.error("event times or ids would overflow int32: fewer --capacity / --steps")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    header("sorted_stream", args, capacity=args.capacity, batch=args.batch, steps=args.steps)
    queue = initial_queue(np.random.default_rng(args.seed), args.capacity)
    key = jax.random.key(args.seed)
    fast, base = (jax.jit(partial(run, steps=args.steps, batch=args.batch, insert=insert))
                  for insert in (jmp_insert, jnp_insert))
    (times, ids, _), (out_times, out_ids) = jax.device_get(fast(queue, key))
    (want_times, want_ids, _), want_out = jax.device_get(base(queue, key))

    checks = Checks()
    checks.equal("every step's processed events (times, ids) equal jnp's", (out_times, out_ids),
                 want_out)
    checks.equal("final queue (times, ids) equals jnp's", (times, ids), (want_times, want_ids))
    checks.true("final queue is sorted", bool(np.all(np.diff(times) >= 0)))
    every_id = np.concatenate([ids, out_ids.ravel()])
    checks.true("no event lost or duplicated", np.array_equal(
        np.sort(every_id), np.arange(args.capacity + args.steps * args.batch)))
    print(f"  processed {out_ids.size} events; simulated time {out_times[0, 0]} -> "
          f"{out_times[-1, -1]} ticks")
    timings = compare_timings(fast, base, (queue, key), reps=args.reps, steps=args.steps)
    timings["jmp_events_per_s"] = args.batch / timings["jmp_s_per_step"]
    timings["jnp_events_per_s"] = args.batch / timings["jnp_s_per_step"]
    print(f"  events processed per second: {timings['jmp_events_per_s']:.3g} (jax_mergepath), "
          f"{timings['jnp_events_per_s']:.3g} (jnp only)")
    # The insert alone, on the final queue's rest and its earliest events rescheduled a random
    # delay later, as a step does (the step's slicing of the queue, done here outside the timed
    # calls, is not part of it).
    b = args.batch
    delay = np.random.default_rng(args.seed).integers(1, 2**DELAY_BITS + 1, b).astype(np.int32)
    stage_args = (jnp.asarray(times[b:]), jnp.asarray(ids[b:]), jnp.asarray(times[:b] + delay),
                  jnp.asarray(ids[:b]))
    timings |= compare_stage(jax.jit(jmp_insert), jax.jit(jnp_insert), stage_args,
                             reps=args.reps, what="insert: sort the new events + merge")
    return result(checks, timings)


if __name__ == "__main__":
    main()
