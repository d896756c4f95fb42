#!/usr/bin/env bash
# test.sh — the README's second command: every test, in a normal build and again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs="$(nproc)"
status=0
for variant in normal sanitize; do
  if [ "$variant" = normal ]; then dir=build; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMG_SANITIZE=OFF)
  else dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=Debug -DMG_SANITIZE=ON "-DCMAKE_C_FLAGS_DEBUG=-g -O1"); fi
  # (-O1 under the sanitizers: what ASan's documentation advises for usable speed; asserts stay on)
  echo "== $variant build ($dir)"
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  (cd "$dir" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest -j"$jobs" --output-on-failure) || status=1
done
exit $status
