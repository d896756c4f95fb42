#!/usr/bin/env bash
# bench/near_min.sh — `memgrad plan` at budgets just above each model's minimum feasible budget,
# where the planner runs its extra solves (planner.c, near_min_rungs) and where its plans swing
# with the budget: per budget, the recompute overhead, the part count, the workspace and the
# solve time (median of ROUNDS runs) of each binary given, side by side, the binaries
# interleaved run by run so that both see the same load.
#   usage: bench/near_min.sh [ROUNDS] MEMGRAD...
#          (default: 3 rounds of build-release/memgrad, built here when missing)
#   MG_NEAR_MODELS: examples/NAME.mg or Checkmate graphs NAME.json (bench/data/checkmate) to
#                   plan (default: transformer resnet18_64 mlp_deep unet_small cnn_fmnist resnet50.json)
#   MG_NEAR_FACTORS: the budgets, as multiples of the minimum (default: 1.01 1.02 1.03 1.05)
# The minimum is the first binary's (`plan` with no budget). docs/planner.md quotes this script.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then rounds=$1; shift; fi
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-release -j"$(nproc)" --target memgrad >/dev/null
  bins=(build-release/memgrad)
fi
models=${MG_NEAR_MODELS:-"transformer resnet18_64 mlp_deep unet_small cnn_fmnist resnet50.json"}
factors=${MG_NEAR_FACTORS:-"1.01 1.02 1.03 1.05"}

# field NAME JSON: the number after "NAME": in the plan's JSON
field() { printf '%s\n' "$2" | sed -n "s/.*\"$1\": \([^,]*\),.*/\1/p" | head -1; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf '%-16s %6s' model factor
for b in "${bins[@]}"; do printf ' | %-46s' "$b"; done
printf '\n'
for m in $models; do
  case $m in
    *.json) src=(--graph "bench/data/checkmate/$m") ;;
    *) src=("examples/$m.mg") ;;
  esac
  minf=$(field min_feasible_bytes "$("${bins[0]}" plan "${src[@]}" --no-cache --format json)")
  for f in $factors; do
    budget=$(awk -v m="$minf" -v f="$f" 'BEGIN {printf "%.0f", m * f}')
    declare -A times=() cells=()
    for ((r = 0; r < rounds; r++)); do
      for i in "${!bins[@]}"; do
        out=$("${bins[$i]}" plan "${src[@]}" --budget "${budget}B" --no-cache --format json)
        times[$i]+="$(field solve_seconds "$out") "
        cells[$i]=$(awk -v o="$(field recompute_overhead "$out")" -v k="$(field micro_batches "$out")" \
          -v w="$(field workspace_bytes "$out")" 'BEGIN {printf "%.4f%% k%s ws %.0f", 100 * o, k == "" ? 1 : k, w}')
      done
    done
    printf '%-16s %6s' "$m" "$f"
    for i in "${!bins[@]}"; do
      printf ' | %-36s %7.2f s' "${cells[$i]}" "$(printf '%s\n' ${times[$i]} | median)"
    done
    printf '\n'
    unset times cells
  done
done
