#!/usr/bin/env bash
# bench/kernels.sh — GFLOP/s of memgrad's GEMM and convolution kernels (bench/kernels.c) next to
# PyTorch's (bench/torch_kernels.py) at the reference models' shapes, single-threaded by
# default. kernels.c is compiled the way a generated module compiles the kernel bitcode (clang 19,
# -O3, host CPU). Rounds of the two alternate; each prints one median per case, and the table
# gives the median over rounds and the ratio.
#   usage: bench/kernels.sh [ROUNDS] [SECONDS_PER_CASE] [FILTER]   (env MG_BENCH_THREADS)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-0.3}
filter=${3:-}
threads=${MG_BENCH_THREADS:-1}
source bench/common.sh
bench_setup
mkdir -p build-release/bench-kernels
bin=build-release/bench-kernels/kernels
clang-19 -std=c11 -O3 -march=native -fno-math-errno -o "$bin" bench/kernels.c -lm
# OpenBLAS 0.3.21 does not know every AVX-512 CPU (AMD Zen 5 gets its Haswell AVX2 kernels);
# on a host with AVX-512 a third series forces its SkylakeX kernels, for a like-for-like GEMM.
avx512=0; grep -qw avx512f /proc/cpuinfo && avx512=1
declare -A mg pt px
names=()
for r in $(seq "$rounds"); do
  while read -r name ms gf; do
    [ "$r" = 1 ] && names+=("$name")
    mg[$name]+=" $gf"
  done < <("$bin" "$secs" "$filter")
  while read -r name ms gf; do pt[$name]+=" $gf"; done < <(/usr/bin/python3 bench/torch_kernels.py "$secs" "$filter")
  [ $avx512 = 1 ] || continue
  while read -r name ms gf; do px[$name]+=" $gf"; done < <(OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch_kernels.py "$secs" "$filter")
done
echo "kernels, $threads thread(s), $rounds rounds; $(bench_torch_line); $(bench_machine_line)"
echo "OpenBLAS core: $(OPENBLAS_VERBOSE=2 /usr/bin/python3 -c 'import torch; torch.ones(8, 8) @ torch.ones(8, 8)' 2>&1 | sed -n 's/^Core: //p')"
if [ $avx512 = 1 ]; then
  printf '%-20s %12s %12s %8s %14s %8s\n' case "memgrad GF/s" "torch GF/s" "mg/torch" "torch SkylakeX" "mg/that"
else
  printf '%-20s %12s %12s %8s\n' case "memgrad GF/s" "torch GF/s" "mg/torch"
fi
for n in "${names[@]}"; do
  a=$(bench_median ${mg[$n]}); b=$(bench_median ${pt[$n]})
  printf '%-20s %12.1f %12.1f %8.2f' "$n" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN{print a/b}')"
  if [ $avx512 = 1 ]; then
    c=$(bench_median ${px[$n]})
    printf ' %14.1f %8.2f' "$c" "$(awk -v a="$a" -v b="$c" 'BEGIN{print a/b}')"
  fi
  echo
done
[ $avx512 = 1 ] && echo "(torch SkylakeX: the same with OPENBLAS_CORETYPE=SkylakeX, OpenBLAS's AVX-512 GEMM; convolutions run in oneDNN either way)"
echo "(GF/s: 2*M*N*K, or 2*N*Co*OH*OW*C*KH*KW for a convolution kernel, per second; mg/torch above 1 means memgrad is faster)"
