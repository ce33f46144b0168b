#!/usr/bin/env bash
# Builds the oneTBB peer: `bash bench/peers/tbb/build.sh [OUT]` (default target/peers/tomii-peer-tbb).
# Needs g++ and libtbb-dev (bench/suite/run.sh installs them); warnings are errors.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$here/../../../target/peers/tomii-peer-tbb}
mkdir -p "$(dirname "$out")"
g++ -std=c++17 -O2 -Wall -Wextra -Werror -I "$here/../../../tomii-types/include" -o "$out" \
    "$here/tbb_peer.cpp" -ltbb -ldl
