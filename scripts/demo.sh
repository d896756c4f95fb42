#!/usr/bin/env bash
# demo.sh — the README's first command: builds memgrad, compiles examples/mlp.mg and
# examples/cnn_fmnist.mg to native code and trains each on Fashion-MNIST for 3 epochs.
# Options (--epochs, --lr, --optimizer, --schedule, ...) go to both trainers.
set -euo pipefail
cd "$(dirname "$0")/.."
# both trainers get the options, so --save would write the CNN's parameters over the MLP's in
# the one file named (found before the build and the data, not after the first model's run)
for a in "$@"; do
  if [ "$a" = --save ]; then
    echo "demo.sh: --save would write both models' parameters to one file, the CNN's over the MLP's;" >&2
    echo "  save one model with its trainer: ./build-release/examples/fashion_mnist/train_mlp --save FILE" >&2
    exit 2
  fi
done
MG_WITH_DATASET=1 bash scripts/setup.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$(nproc)" --target train_mlp train_cnn_fmnist >/dev/null
./build-release/examples/fashion_mnist/train_mlp --epochs 3 "$@"
./build-release/examples/fashion_mnist/train_cnn_fmnist --epochs 3 "$@"
