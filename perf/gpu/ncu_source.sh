#!/usr/bin/env bash
# ncu_source.sh: where a kernel's instructions go. Builds one of the sweep programs with line
# info, profiles one launch of the kernels matching a regex with ncu's source counters (executed
# instructions and stall samples per SASS line) beside speed-of-light and warp-state sections,
# and writes the report, its details page and its SASS source page (CSV) to $OUT (or ./gpu-logs).
# Usage (repo root, GPU machine):
#   bash perf/gpu/ncu_source.sh NAME SWEEP.cu KERNEL_REGEX LAUNCH_SKIP [program args...]
#   e.g. NCU_COUNT=2 bash perf/gpu/ncu_source.sh quad perf/sweeps/quad_sweep.cu \
#          "quad_(merge|partition)_kernel" 0 27 15 1
#   (quad_sweep: the first quad shape's first split and merge; NCU_COUNT launches, default 1)
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
name="$1"; src="$2"; kernel="$3"; skip="$4"; shift 4
bin="/tmp/$(basename "$src" .cu)"
[ -x "$bin" ] || nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo --expt-relaxed-constexpr \
  -Iffi/include -Iffi/cuda "$src" -o "$bin" || { echo "BUILD FAILED: $src"; exit 1; }
ncu --kernel-name regex:"$kernel" --launch-skip "$skip" --launch-count "${NCU_COUNT:-1}" \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section InstructionStats --section SourceCounters --section LaunchStats --section Occupancy \
  --import-source yes -f -o "$out/$name" "$bin" "$@" > "$out/$name-run.txt" 2>&1
echo "ncu $name rc=$?"
ncu -i "$out/$name.ncu-rep" --page details > "$out/$name-details.txt" 2>&1
ncu -i "$out/$name.ncu-rep" --page source --csv --print-source sass > "$out/$name-sass.csv" 2>&1
echo "ncu $name source rc=$? ($(wc -l < "$out/$name-sass.csv") lines)"
grep -E "Duration|Throughput|Issue Slots Busy|Executed Ipc|Registers Per|Achieved Occ|No Eligible" \
  "$out/$name-details.txt" | head -20
