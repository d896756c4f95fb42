#!/usr/bin/env bash
# demo.sh — the README's first command: builds memgrad, compiles examples/mlp.mg and
# examples/cnn_fmnist.mg to native code and trains each on Fashion-MNIST for 3 epochs.
# Options (--epochs, --lr, --optimizer, --schedule, ...) go to both trainers.
set -euo pipefail
cd "$(dirname "$0")/.."
MG_WITH_DATASET=1 bash scripts/setup.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$(nproc)" --target train_mlp train_cnn_fmnist >/dev/null
./build-release/examples/fashion_mnist/train_mlp --epochs 3 "$@"
./build-release/examples/fashion_mnist/train_cnn_fmnist --epochs 3 "$@"
