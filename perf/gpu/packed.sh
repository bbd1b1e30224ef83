#!/usr/bin/env bash
# packed.sh: runs a GPU run script with its logs in a scratch folder, then packs them into ONE
# file, $OUT/logs.tgz (the device tool brings back at most 8 files from $OUT: a script that
# writes more loses the rest). The script's output and exit status pass through.
#   bash perf/gpu/packed.sh perf/gpu/topk_run.sh [its arguments]
#   (here: mkdir -p logs && tar xzf /work/.device/N/logs.tgz -C logs)
set -uo pipefail
dest="${OUT:-gpu-logs}"; mkdir -p "$dest"; dest="$(cd "$dest" && pwd)"
scratch="$(mktemp -d)"
OUT="$scratch" bash "$@"
status=$?
tar czf "$dest/logs.tgz" -C "$scratch" . && echo "packed $(find "$scratch" -type f | wc -l) files into $dest/logs.tgz"
exit $status
