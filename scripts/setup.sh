#!/usr/bin/env bash
# setup.sh — installs the Debian packages memgrad needs to build, test and run its demo,
# when they are missing. Run (with bash) by demo.sh and test.sh; safe to run again.
set -euo pipefail
packages=(cmake make gcc pkg-config llvm-19-dev clang-19 check libxxhash-dev libcjson-dev coinor-libcbc-dev zlib1g-dev
          libexpat1-dev libpng-dev chromium)  # expat, libpng, chromium: test_report checks the SVG reports
[ "${MG_WITH_DATASET:-0}" = 1 ] && packages+=(dataset-fashion-mnist)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
