#!/usr/bin/env bash
# demo.sh — the README's first command: builds memgrad, compiles examples/mlp.mg to native
# code and trains it on Fashion-MNIST for 3 epochs.
set -euo pipefail
cd "$(dirname "$0")/.."
MG_WITH_DATASET=1 bash scripts/setup.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$(nproc)" --target train_mlp >/dev/null
./build-release/examples/fashion_mnist/train_mlp --epochs 3 "$@"
