#!/usr/bin/env bash
# bench/run.sh — train-step time of memgrad's generated code against PyTorch eager on each
# reference model of examples/, side by side. Every model is compiled three times: store-all,
# 50% of the store-all workspace and the minimum feasible budget, so the cost of recompute
# shows next to the kernels' own speed. Installs Debian's python3-torch and the pthread OpenBLAS
# (without it torch falls back to the reference BLAS), pins both sides to the same thread count,
# interleaves rounds (every model and budget, then PyTorch, round after round) so machine noise
# hits all of them, and prints medians and the ratios. A model whose .mg is not (yet) in
# examples/ is skipped with a message; a budget below the model's minimum is reported as such.
#   usage: bench/run.sh [ROUNDS] [REPS_PER_ROUND]
#   env:   MG_BENCH_THREADS (default 1), MG_BENCH_MODELS (default: all five, space-separated)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
reps=${2:-5}
threads=${MG_BENCH_THREADS:-1}
models=(${MG_BENCH_MODELS:-mlp_deep cnn_fmnist transformer resnet18_64 unet_small})
source bench/common.sh
bench_setup
out=build-release/bench-steps
mkdir -p "$out"

# Labels and token ids are drawn from [0, range): the class count (the vocabulary for transformer).
int_range() { case $1 in transformer) echo 1000 ;; unet_small) echo 2 ;; *) echo 10 ;; esac; }

variants=() # "model budget-label binary"
for m in "${models[@]}"; do
  mg=examples/$m.mg
  if [ ! -f "$mg" ]; then
    echo "skip $m: $mg is not in this tree"
    continue
  fi
  name=$(awk '$1 == "model" {print $2; exit}' "$mg") # the prefix of the generated functions
  minb=$(./build-release/memgrad plan "$mg" --bytes | awk '/minimum feasible/ {print $3}')
  upper=$(echo "$name" | tr '[:lower:]' '[:upper:]')
  for label in store-all 50% min; do
    case $label in store-all) opt=() ;; 50%) opt=(--budget 50%) ;; min) opt=(--budget "${minb}B") ;; esac
    tag=$m-${label%\%}
    if ! err=$(./build-release/memgrad compile "$mg" -o "$out/$tag.o" --header "$out/$tag.h" "${opt[@]}" 2>&1); then
      echo "skip $m at $label: ${err#*error: }"
      continue
    fi
    ./build-release/memgrad plan "$mg" "${opt[@]}" >"$out/$tag.plan"
    cc -O2 -std=c11 -D_POSIX_C_SOURCE=200112L -I"$out" -DMODEL="$name" -DMODEL_UPPER="$upper" \
       -DMODEL_HEADER="\"$tag.h\"" bench/step_time.c "$out/$tag.o" -lm -o "$out/step_$tag"
    variants+=("$m $label $out/step_$tag")
  done
done
[ ${#variants[@]} -gt 0 ] || { echo "no model to time"; exit 1; }

echo "train step, $threads thread(s); $(bench_torch_line); $(bench_machine_line)"
declare -A times tparams
for r in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    read -r m label bin <<<"$v"
    times[$m/$label]+=" $("$bin" "$reps" "$(int_range "$m")" | awk '{print $2}' | tr '\n' ' ')"
  done
  for m in "${models[@]}"; do
    printf '%s\n' "${variants[@]}" | grep -q "^$m " || continue
    t=$(/usr/bin/python3 bench/torch_models.py "$m" "$reps")
    times[$m/torch]+=" $(awk '/^step_ms/ {print $2}' <<<"$t" | tr '\n' ' ')"
    tparams[$m]=$(awk '/^params/ {print $2}' <<<"$t")
  done
done

printf '\n%-12s %-10s %10s %10s %7s %9s %10s\n' model budget workspace "median ms" runs "vs torch" recompute
for m in "${models[@]}"; do
  [ -n "${times[$m/torch]:-}" ] || continue
  p=$(bench_median ${times[$m/torch]})
  for label in store-all 50% min; do
    [ -n "${times[$m/$label]:-}" ] || continue
    tag=$m-${label%\%}
    ws=$(awk '/^  workspace/ {print $2, $3}' "$out/$tag.plan")
    over=$(awk '/recompute overhead/ {print $(NF)}' "$out/$tag.plan")
    t=$(bench_median ${times[$m/$label]})
    n=$(wc -w <<<"${times[$m/$label]}")
    printf '%-12s %-10s %10s %10.1f %7d %9.2f %10s\n' "$m" "$label" "$ws" "$t" "$n" "$(awk -v a="$t" -v b="$p" 'BEGIN{print a/b}')" "$over"
  done
  printf '%-12s %-10s %10s %10.1f %7d\n' "$m" pytorch - "$p" "$(wc -w <<<"${times[$m/torch]}")"
done
# The two sides should be the same model: compare the parameter counts (memgrad's parameter
# blob is padded to its alignment per tensor, so it is a little larger than 4 bytes each).
for m in "${models[@]}"; do
  [ -n "${tparams[$m]:-}" ] || continue
  mb=$(./build-release/memgrad plan "examples/$m.mg" --bytes | awk '/^  params/ {print $2}')
  printf 'parameters of %s: memgrad %s bytes (%.0f floats), PyTorch %s\n' "$m" "$mb" "$(awk -v b="$mb" 'BEGIN{print b/4}')" "${tparams[$m]}"
done
echo "(vs torch: memgrad median / PyTorch eager median, below 1 means memgrad is faster;"
echo " recompute: extra FLOPs the plan executes over one forward+backward)"
