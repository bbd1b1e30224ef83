#!/usr/bin/env bash
# examples_run.sh: one GPU run for the examples and the parity fuzz: install (the carried wheel
# or a build), the test files named in JMP_TEST_ARGS (relative to tests/; default:
# test_examples.py), each example at --size gpu with its GPU time per step by kernel
# (example_timeline.py; EXAMPLE_ARGS adds arguments to every example), then tests/tools/fuzz_parity.py
# for JMP_FUZZ_SECONDS (default 120; 0 skips) at --max-log2 JMP_FUZZ_LOG2 (default 24: quad
# passes of 8-byte elements). Logs to $OUT (or ./gpu-logs). Exit status: non-zero when the
# install, a test, an example or the fuzz failed.
#   bash perf/gpu/examples_run.sh [example ...]    # default: all three
# shellcheck source=run_prologue.sh
source "$(dirname "$0")/run_prologue.sh"  # out, repo (the working directory), the install, status=0
# shellcheck disable=SC2086  # (JMP_TEST_ARGS: several arguments)
(cd tests && python3 -m pytest -q -p no:cacheprovider ${JMP_TEST_ARGS:-test_examples.py}) 2>&1 \
  | tee "$out/pytest.log" | tail -4 || status=1
examples=("$@")
[ ${#examples[@]} = 0 ] && examples=(species_energy sorted_stream cell_list)
for e in "${examples[@]}"; do
  # shellcheck disable=SC2086
  python3 perf/gpu/example_timeline.py "$e" --size gpu ${EXAMPLE_ARGS:-} > "$out/$e.txt" 2>&1 \
    || status=1
  grep -v -E '^ +[0-9]+ +[0-9.]+ ' "$out/$e.txt"  # the example's table rows stay in the log
done
if [ "${JMP_FUZZ_SECONDS:-120}" != 0 ]; then
  python3 tests/tools/fuzz_parity.py --seconds "${JMP_FUZZ_SECONDS:-120}" --seed "${JMP_FUZZ_SEED:-1}" \
    --max-log2 "${JMP_FUZZ_LOG2:-24}" > "$out/fuzz.txt" 2>&1 || status=1
  tail -15 "$out/fuzz.txt"
fi
exit $status
