#!/usr/bin/env bash
# The full benchmark set behind BENCHMARKS.md, one run after another (run it on an otherwise
# idle machine: every figure is CPU-bound on 2 cores). Results and logs go to OUTDIR.
# Needs the test setup first (scripts/test.sh builds the venv and the Kubernetes binaries).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/bench-all.sh OUTDIR}
B=.venv/bin/drasched
mkdir -p "$OUT"
date -u > "$OUT/started"
$B bench claim-template --scheduler both --api-ceiling --log-dir "$OUT/logs" > "$OUT/claim-template.txt" 2>&1
$B bench claim-template-steady --scheduler both --log-dir "$OUT/logs" > "$OUT/steady.txt" 2>&1
$B bench extended-resource --scheduler both --log-dir "$OUT/logs" > "$OUT/extended.txt" 2>&1
$B bench match-attribute --scheduler both --log-dir "$OUT/logs" > "$OUT/match.txt" 2>&1
$B bench partitionable --scheduler both --log-dir "$OUT/logs" > "$OUT/partitionable.txt" 2>&1
$B bench gangs --scheduler drasched --log-dir "$OUT/logs" > "$OUT/gangs.txt" 2>&1
for n in 100 500 1000 5000; do  # the embedded scale curve, each size in its own process
  $B bench claim-template --embedded --nodes "$n" >> "$OUT/embedded-curve.txt" 2>&1
done
$B bench all --embedded > "$OUT/embedded-all.txt" 2>&1
# where drasched's CPU goes in the workload it trails most (py-spy samples next to the log)
$B bench claim-template --scheduler drasched --profile --log-dir "$OUT/profile" > "$OUT/profile.txt" 2>&1
# one full cycle over the published replay shape (4,000 nodes x 8 GPUs, 140,000 pods), embedded
/usr/bin/time -v $B bench replay > "$OUT/replay.txt" 2>&1
# 30 minutes of pods created and completed through drasched serve: RSS over time, errors in the log
$B bench churn --log-dir "$OUT/logs" > "$OUT/churn.txt" 2>&1
date -u > "$OUT/finished"
