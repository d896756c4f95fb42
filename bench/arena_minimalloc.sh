#!/usr/bin/env bash
# bench/arena_minimalloc.sh — the static arena allocator on MiniMalloc's eleven instances
# (bench/data/minimalloc, from the MiniMalloc paper, ASPLOS 2023): runs `memgrad arena` on each
# with its capacity (the number in the file name) and prints one row per instance.
#   usage: bench/arena_minimalloc.sh [MEMGRAD] [TIME_LIMIT_SECONDS]
#          (default: build-release/memgrad, built here when missing; limit 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
memgrad=${1:-}
limit=${2:-10}
if [ -z "$memgrad" ]; then
  memgrad=build-release/memgrad
  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-release -j"$(nproc)" --target memgrad >/dev/null
fi
printf '%-9s %8s %12s %12s %12s %6s %8s %9s\n' instance buffers lower_bound arena capacity fits optimal seconds
fails=0
for f in bench/data/minimalloc/*.csv; do
  name=$(basename "$f" .csv)
  cap=${name#*.}
  out=$("$memgrad" arena "$f" --capacity "$cap" --time-limit "$limit" --format json)
  # the JSON's first line holds every figure; the offsets follow on their own lines
  head=${out%%$'\n'*}
  field() { printf '%s\n' "$head" | sed -n "s/.*\"$1\": \([^,]*\),.*/\1/p"; }
  fits=$(field fits)
  [ "$fits" = true ] || fails=$((fails + 1))
  printf '%-9s %8s %12s %12s %12s %6s %8s %9.3f\n' "${name%%.*}" "$(field buffers)" "$(field lower_bound)" \
    "$(field arena_bytes)" "$(field capacity)" "$fits" "$(field optimal)" "$(field solve_seconds)"
done
echo "$fails of $(ls bench/data/minimalloc/*.csv | wc -l) instances do not fit"
