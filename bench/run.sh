#!/usr/bin/env bash
# bench/run.sh — train-step time of memgrad's generated code against PyTorch eager on each
# reference model of examples/, side by side. Every model is compiled three times: store-all,
# 50% of the store-all workspace and the minimum feasible budget, so the cost of recompute
# shows next to the kernels' own speed. Installs Debian's python3-torch and the pthread OpenBLAS
# (without it torch falls back to the reference BLAS), pins both sides to the same thread count,
# interleaves memgrad and PyTorch model by model within each round so machine noise hits both
# sides of a ratio alike, and prints wall-clock and CPU-time medians and per-round ratios. A model whose .mg is not (yet) in
# examples/ is skipped with a message; a budget below the model's minimum is reported as such.
#   usage: bench/run.sh [ROUNDS] [REPS_PER_ROUND]
#   env:   MG_BENCH_THREADS (default 1), MG_BENCH_MODELS (default: all five, space-separated),
#          MG_BENCH_MALLOC=default (PyTorch with glibc's malloc defaults; see common.sh)
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
# PyTorch runs each convolutional model twice, with contiguous (NCHW) and channels_last tensors:
# oneDNN's speed depends on the layout, and memgrad is compared with the faster of the two.
torch_formats() { case $1 in cnn_fmnist|resnet18_64|unet_small) echo nchw channels_last ;; *) echo nchw ;; esac; }
# Each round times, model by model, every memgrad budget and PyTorch back to back (memgrad
# first in odd rounds, PyTorch first in even ones), so each ratio is taken side by side.
declare -A wall cpu tparams # key: model/label/round -> the round's step times
mg_round() { # model label binary round
  local o; o=$("$3" "$reps" "$(int_range "$1")")
  wall[$1/$2/$4]=$(awk '/^step_ms/ {print $2}' <<<"$o" | tr '\n' ' ')
  cpu[$1/$2/$4]=$(awk '/^step_ms/ {print $3}' <<<"$o" | tr '\n' ' ')
}
torch_round() { # model round
  local f o
  for f in $(torch_formats "$1"); do
    o=$(/usr/bin/python3 bench/torch_models.py "$1" "$reps" "$f")
    wall[$1/torch-$f/$2]=$(awk '/^step_ms/ {print $2}' <<<"$o" | tr '\n' ' ')
    cpu[$1/torch-$f/$2]=$(awk '/^step_ms/ {print $3}' <<<"$o" | tr '\n' ' ')
    tparams[$1]=$(awk '/^params/ {print $2}' <<<"$o")
  done
}
loads=()
for r in $(seq "$rounds"); do
  for m in "${models[@]}"; do
    printf '%s\n' "${variants[@]}" | grep -q "^$m " || continue
    if [ $((r % 2)) = 0 ]; then torch_round "$m" "$r"; fi
    for v in "${variants[@]}"; do
      read -r vm label bin <<<"$v"
      if [ "$vm" = "$m" ]; then mg_round "$m" "$label" "$bin" "$r"; fi
    done
    if [ $((r % 2)) = 1 ]; then torch_round "$m" "$r"; fi
  done
  loads+=("$(awk '{print $1}' /proc/loadavg)")
done
echo "1-minute load average after each round: ${loads[*]}"

all_rounds() { local -n a=$1; local r; for r in $(seq "$rounds"); do echo "${a[$2/$r]:-}"; done; }
# the faster PyTorch format by its median over all rounds, on one clock (array name)
best_format() {
  local -n a=$1; local f best="" bt=""
  for f in $(torch_formats "$2"); do
    t=$(bench_median $(all_rounds "$1" "$2/torch-$f"))
    if [ -z "$bt" ] || awk -v a="$t" -v b="$bt" 'BEGIN{exit !(a < b)}'; then best=$f bt=$t; fi
  done
  echo "$best"
}
# median over rounds of (this round's median / the same round's PyTorch median)
ratio() { # array model label torch-format
  local -n a=$1; local r x y q=()
  for r in $(seq "$rounds"); do
    [ -n "${a[$2/$3/$r]:-}" ] && [ -n "${a[$2/torch-$4/$r]:-}" ] || continue
    x=$(bench_median ${a[$2/$3/$r]}); y=$(bench_median ${a[$2/torch-$4/$r]})
    q+=("$(awk -v a="$x" -v b="$y" 'BEGIN{print a/b}')")
  done
  bench_median "${q[@]}"
}

printf '\n%-12s %-14s %10s %8s %8s %5s %8s %8s %10s\n' model budget workspace "wall ms" "cpu ms" runs "vs(wall)" "vs(cpu)" recompute
for m in "${models[@]}"; do
  [ -n "${tparams[$m]:-}" ] || continue
  bw=$(best_format wall "$m"); bc=$(best_format cpu "$m")
  for label in store-all 50% min; do
    [ -n "${wall[$m/$label/1]:-}" ] || continue
    tag=$m-${label%\%}
    ws=$(awk '/^  workspace/ {print $2, $3}' "$out/$tag.plan")
    over=$(awk '/recompute overhead/ {print $(NF)}' "$out/$tag.plan")
    w=$(all_rounds wall "$m/$label"); c=$(all_rounds cpu "$m/$label")
    printf '%-12s %-14s %10s %8.1f %8.1f %5d %8.2f %8.2f %10s\n' "$m" "$label" "$ws" "$(bench_median $w)" \
      "$(bench_median $c)" "$(wc -w <<<"$w")" "$(ratio wall "$m" "$label" "$bw")" "$(ratio cpu "$m" "$label" "$bc")" "$over"
  done
  for f in $(torch_formats "$m"); do
    w=$(all_rounds wall "$m/torch-$f"); c=$(all_rounds cpu "$m/torch-$f")
    mark=""; [ "$f" = "$bw" ] && mark+=" w"; [ "$f" = "$bc" ] && mark+=" c"
    lab=pytorch; [ "$f" = nchw ] || lab=pytorch-cl
    printf '%-12s %-14s %10s %8.1f %8.1f %5d %s\n' "$m" "$lab" - "$(bench_median $w)" "$(bench_median $c)" \
      "$(wc -w <<<"$w")" "${mark:+ (faster on:$mark)}"
  done
done
# The two sides should be the same model: compare the parameter counts (memgrad's parameter
# blob is padded to its alignment per tensor, so it is a little larger than 4 bytes each).
for m in "${models[@]}"; do
  [ -n "${tparams[$m]:-}" ] || continue
  mb=$(./build-release/memgrad plan "examples/$m.mg" --bytes | awk '/^  params/ {print $2}')
  printf 'parameters of %s: memgrad %s bytes (%.0f floats), PyTorch %s\n' "$m" "$mb" "$(awk -v b="$mb" 'BEGIN{print b/4}')" "${tparams[$m]}"
done
echo "(vs(wall), vs(cpu): median over rounds of memgrad's median / the same round's median of the"
echo " faster PyTorch format on that clock (w, c; pytorch-cl: channels_last); below 1 means memgrad is faster. cpu ms: process"
echo " CPU time, which leaves out what other processes took on a shared machine;"
echo " recompute: extra FLOPs the plan executes over one forward+backward)"
