#!/usr/bin/env bash
# The head-to-head suite in one command: `bash bench/suite/run.sh [--quick] [OPTIONS...]`.
# Installs what it needs (g++ and libtbb-dev with apt-get when missing; dask, matplotlib and the
# tomii package into bench/suite/.venv), builds Tomii in release mode with every scheduler, the
# Rayon peer (a workspace member) and the oneTBB peer, then runs `python -m headtohead`, which
# writes bench/suite/results/ and the table of bench/README.md "Head-to-head". Options after
# run.sh go to it (--quick, --repeats N, --only W1,W4, --no-readme; --help lists them).
# Exits non-zero with an `error:` line when a tool, a build or a peer is missing.
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

VENV=bench/suite/.venv
TBB_PEER=target/peers/tomii-peer-tbb
RAYON_PEER=target/release/tomii-peer-rayon
STAMP=$VENV/.tomii-installed

run() {
    echo "+ $*"
    "$@"
}

die() {
    echo "error: $*" >&2
    exit 1
}

apt_install() {
    command -v apt-get >/dev/null || die "$1 is missing and there is no apt-get to install it; install $2 yourself"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    run "${sudo[@]}" apt-get install -y -q "$2" || die "apt-get install $2 failed; install it yourself, then rerun"
}

step_tools() {
    local tool
    for tool in cargo python3 git; do
        command -v "$tool" >/dev/null || die "'$tool' is not on PATH; install it first"
    done
    command -v g++ >/dev/null || apt_install g++ g++
    [ -f /usr/include/oneapi/tbb/flow_graph.h ] || apt_install "oneTBB's headers" libtbb-dev
}

step_build() {
    run cargo build --release --workspace || die "cargo build --release --workspace failed (output above)"
    [ -x "$RAYON_PEER" ] || die "the Rayon peer $RAYON_PEER was not built (crate bench/peers/rayon)"
    run bash bench/peers/tbb/build.sh "$TBB_PEER" ||
        die "the oneTBB peer did not build (bench/peers/tbb/tbb_peer.cpp; g++ output above)"
}

# What the installed package was built from: HEAD plus the uncommitted changes to its sources.
package_stamp() {
    {
        git rev-parse HEAD
        git diff HEAD -- tomii-core tomii-types tomii-py python schedulers plugins pyproject.toml Cargo.lock
    } | sha1sum | cut -d' ' -f1
}

step_python() {
    if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
        rm -rf "$VENV"
        run python3 -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
    fi
    run "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
        'maturin>=1.5,<2' dask matplotlib numpy tqdm || die "pip could not install the suite's packages"
    local stamp
    stamp=$(package_stamp)
    if [ "$(cat "$STAMP" 2>/dev/null)" != "$stamp" ]; then
        # A release build of the package with its schedulers (as scripts/main.sh installs it).
        run "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet --no-build-isolation . ||
            die "pip install . (the tomii package, release build) failed"
        echo "$stamp" >"$STAMP"
    else
        echo "tomii package in $VENV is up to date"
    fi
}

start=$SECONDS
printf '==> [1/4] tools\n'
step_tools
printf '==> [2/4] build: Tomii (release, every scheduler), the Rayon and oneTBB peers\n'
step_build
printf '==> [3/4] Python: %s (dask, matplotlib, the tomii package)\n' "$VENV"
step_python
printf '==> [4/4] the suite\n'
status=0
PYTHONPATH=bench/suite "$VENV/bin/python" -m headtohead "$@" || status=$?
printf '==> head-to-head finished in %ds (exit %d)\n' $((SECONDS - start)) "$status"
exit "$status"
