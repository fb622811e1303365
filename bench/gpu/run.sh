#!/usr/bin/env bash
# The GPU machine's one call: unpacks the bundle of bench/gpu/build.sh and, within a time budget,
# measures first and tests after (the measurements are what a call there is for):
#   1. our bench's `cube_*` rows on the device (spmm, sddmm, mm forward+backward on the three
#      workloads, the 2:4 layer at M = K = N = 4096, a GCN training step on Cora) -> ours.json
#   2. PyTorch and PyG on the same workloads (torch_gpu.py)                       -> pytorch.json
#   3. the comparison against the bars of issue 45, with bandwidth (compare.py)   -> compare.md
#   4. the GCN example on the device, ten seeds                                   -> gcn_cora.log
#   5. the op and layer test binaries on the device (the suites CI runs on lavapipe; the tests that
#      read the checkout's ../shared/data are skipped: it is not there)         -> tests-*.log
# Everything goes to $OUT (the device tool's folder; ./gpu-out elsewhere), with env.txt (GPU,
# driver, versions) and steps.txt (each step's status and seconds).
#
#   bench/gpu/run.sh BUNDLE.tar.xz|BUNDLE_DIR
#
# Environment:
#   SPARSEGRAD_GPU_DEVICE  the device of our binaries: cuda (default), or wgpu to rehearse on a
#                          machine without a GPU (a bundle built with FEATURES=wgpu,fusion,datasets)
#   TORCH_DEVICE           PyTorch's device (default cuda; cpu to rehearse)
#   RUN_BUDGET_S           seconds for all steps (default 500: a device call's limit is 600)
set -uo pipefail
BUNDLE=${1:?usage: run.sh BUNDLE.tar.xz|BUNDLE_DIR}
OUT=${OUT:-$PWD/gpu-out}
DEVICE=${SPARSEGRAD_GPU_DEVICE:-cuda}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
BUDGET=${RUN_BUDGET_S:-500}
START=$SECONDS
mkdir -p "$OUT"

if [ -d "$BUNDLE" ]; then
    B=$(cd "$BUNDLE" && pwd)
else
    WORK=$(mktemp -d)
    xz -dc "$BUNDLE" | tar -C "$WORK" -xf - || { echo "run.sh: cannot unpack $BUNDLE"; exit 1; }
    B=$(ls -d "$WORK"/*/ | head -1)
    B=${B%/}
fi
export SPARSEGRAD_DATA=$B/data
# The binaries take what they need from the environment: no GPU probe beyond theirs.
{
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(uname -a)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
    python3 -c 'import torch_geometric; print("torch_geometric", torch_geometric.__version__)' 2>&1
    echo "device of our binaries: $DEVICE; torch device: $TORCH_DEVICE"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# `run_step NAME SECONDS CMD...`: runs CMD under a timeout of SECONDS or what is left of the budget
# (whichever is less), its output in $OUT/NAME.log; records status and time in steps.txt.
run_step() {
    local name=$1 cap=$2
    shift 2
    local left=$((BUDGET - (SECONDS - START)))
    [ "$left" -lt "$cap" ] && cap=$left
    if [ "$cap" -le 5 ]; then
        printf '%-14s skipped (budget spent)\n' "$name" | tee -a "$OUT/steps.txt"
        return
    fi
    local t0=$SECONDS
    echo "==== $name (up to $cap s)"
    timeout --kill-after=5 "$cap" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 15 "$OUT/$name.log"
    printf '%-14s rc %-4s %5d s\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$OUT/steps.txt"
}

run_step bench 200 "$B/bin/bench" --json --only cube --cube-device "$DEVICE"
grep '^{"op"' "$OUT/bench.log" | python3 -c 'import json, sys
rows = [json.loads(l) for l in sys.stdin]
json.dump({"device": sys.argv[1], "rows": rows}, open(sys.argv[2], "w"), indent=1)' "$DEVICE" "$OUT/ours.json"
run_step torch 150 python3 "$B/torch_gpu.py" "$OUT/pytorch.json" --device "$TORCH_DEVICE"
python3 "$B/compare.py" "$OUT/ours.json" "$OUT/pytorch.json" --env "$OUT/env.txt" > "$OUT/compare.md" 2>&1
cat "$OUT/compare.md"
run_step gcn_cora 120 "$B/bin/gcn_cora" --device "$DEVICE" --seeds 10
export SPARSEGRAD_TEST_DEVICE=$DEVICE
# Four test threads: the device serialises its launches anyway, and fewer threads keep the
# host's share (the kernels' first compilation) from crowding out the device's.
run_step tests-ops 240 "$B/bin/test_ops" --skip io:: --test-threads 4
run_step tests-nn 120 "$B/bin/test_nn" --skip datasets:: --test-threads 4
echo "==== steps"
cat "$OUT/steps.txt"
echo "total $((SECONDS - START)) s"
