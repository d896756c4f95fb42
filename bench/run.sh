#!/usr/bin/env bash
# bench/run.sh — train-step time of memgrad's generated code against PyTorch eager on the same
# model, side by side. Installs Debian's python3-torch and the pthread OpenBLAS (without it torch
# falls back to the reference BLAS), pins both to the same thread count, interleaves rounds of
# the two so machine noise hits both, and prints medians and their ratio.
#   usage: bench/run.sh [ROUNDS] [REPS_PER_ROUND]      (env MG_BENCH_THREADS, default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
reps=${2:-5}
threads=${MG_BENCH_THREADS:-1}
bash scripts/setup.sh
missing=()
for p in python3-torch libopenblas0-pthread; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$(nproc)" --target bench_mlp_deep >/dev/null
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads MG_BENCH_THREADS=$threads
blas=$(/usr/bin/python3 -c 'import torch; print(torch.__config__.show())' 2>/dev/null | grep -io 'blas_info=[a-z]*\|openblas' | head -1 || true)
echo "model mlp_deep (batch 256, 784 -> 16 x 1024 -> 10); $threads thread(s); torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') ${blas}"
mg=(); pt=()
for r in $(seq "$rounds"); do
  mg+=($(./build-release/bench/bench_mlp_deep "$reps" | awk '{print $2}'))
  pt+=($(/usr/bin/python3 bench/torch_mlp_deep.py "$reps" | awk '{print $2}'))
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
m=$(median "${mg[@]}"); p=$(median "${pt[@]}")
gflop=$(awk 'BEGIN { l = 784*1024 + 15*1024*1024 + 1024*10; print 2*256*l*3/1e9 }')
printf 'memgrad train step: median %8.1f ms  (%d runs)  %.1f GFLOP/s\n' "$m" "${#mg[@]}" "$(awk -v g="$gflop" -v t="$m" 'BEGIN{print g/(t/1e3)}')"
printf 'pytorch train step: median %8.1f ms  (%d runs)  %.1f GFLOP/s\n' "$p" "${#pt[@]}" "$(awk -v g="$gflop" -v t="$p" 'BEGIN{print g/(t/1e3)}')"
printf 'ratio memgrad / pytorch: %.2f  (below 1 means memgrad is faster)\n' "$(awk -v a="$m" -v b="$p" 'BEGIN{print a/b}')"
