# bench/common.sh — sourced by run.sh and kernels.sh: installs what the comparison needs
# (Debian python3-torch, and the pthread OpenBLAS without which torch uses the reference BLAS),
# builds memgrad in build-release, pins every BLAS/OpenMP pool to MG_BENCH_THREADS, and gives
# the medians and the lines that say what ran where.
bench_setup() {
  bash scripts/setup.sh
  local missing=() p sudo=""
  for p in python3-torch libopenblas0-pthread; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-release -j2 --target memgrad >/dev/null
  export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads MG_BENCH_THREADS=$threads
  # PyTorch eager allocates every activation and gradient afresh with malloc; glibc serves
  # blocks above its (dynamic) mmap threshold with mmap and trims freed heap tops, so each step
  # page-faults its tensors in again (cnn_fmnist: ~6,000 minor faults per step, about 2/3 of its
  # CPU time on this VM). These glibc tunables keep freed memory in the heap for reuse, as a
  # caching allocator would — PyTorch's best case; memgrad's binaries allocate once and are
  # unaffected. MG_BENCH_MALLOC=default times PyTorch with glibc's defaults instead.
  if [ "${MG_BENCH_MALLOC:-}" != default ]; then
    export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=68719476736
  fi
}

# median of the arguments
bench_median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

bench_torch_line() {
  echo "torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)" \
       "with OpenBLAS $(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null) (pthread)," \
       "malloc: $([ -n "${MALLOC_MMAP_THRESHOLD_:-}" ] && echo "mmap threshold $MALLOC_MMAP_THRESHOLD_, no trim" || echo "glibc defaults")"
}

bench_machine_line() {
  echo "$(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2}'), $(getconf _NPROCESSORS_ONLN) cores; load $(uptime | sed 's/.*load average: //')"
}
