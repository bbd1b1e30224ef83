#!/usr/bin/env bash
# probe.sh: build with CUDA, then profile the cases of probe_cases.py: user-visible time
# (50 calls), ncu sections of the merge kernels (one launch each, after the checked call), and
# per-kernel durations of a presorted sort (JMP_NO_NCU=1: wall times only). Logs to $OUT (or
# ./gpu-logs).
#   bash tests/gpu/probe.sh [case ...]
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
repo="$(cd "$(dirname "$0")/../.." && pwd)"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
if [ -z "${JMP_SKIP_BUILD:-}" ]; then
  bash "$repo/tests/gpu/install.sh" > "$out/build.log" 2>&1 \
    || { tail -30 "$out/build.log"; echo "BUILD FAILED"; exit 1; }
fi
cd "$repo/tests"
cases=("$@")
[ ${#cases[@]} = 0 ] && cases=(vmap32 vmap512 vmap4096 merge_i32 merge_f32 merge_f64 sort_presorted)
for c in "${cases[@]}"; do python3 gpu/probe_cases.py "$c" --calls 50; done 2>&1 | tee "$out/wall.txt"
[ -n "${JMP_NO_NCU:-}" ] && exit 0
for c in "${cases[@]}"; do
  if [ "$c" = sort_presorted ] || [ "$c" = sort_i32 ]; then
    ncu --metrics gpu__time_duration.sum --print-summary per-kernel \
      python3 gpu/probe_cases.py "$c" --calls 1 > "$out/ncu-$c.txt" 2>&1
    echo "== $c"; grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" "$out/ncu-$c.txt" | head -60
  else
    ncu -k regex:"merge_|partition" --launch-skip 0 --launch-count 2 \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
      python3 gpu/probe_cases.py "$c" --calls 1 > "$out/ncu-$c.txt" 2>&1
    echo "== $c"; grep -E "merge_|partition|Duration|Throughput|Issue Slots Busy|Registers Per|Achieved Occ|Stall|No Eligible" "$out/ncu-$c.txt" | head -40
  fi
done
