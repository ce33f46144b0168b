#!/usr/bin/env bash
# The one command that runs every gate and test from a fresh clone: `bash scripts/test.sh`.
# Needs cargo, python3 and a C compiler on PATH; adds rustfmt/clippy through rustup when missing,
# and installs with apt-get the Debian packages its tests need when missing (chromium,
# chromium-driver, libopenblas-dev, liblapacke-dev, g++, libtbb-dev, valgrind): on CI (`CI` set)
# or without a terminal on stdin at once, else after asking (y/N).
# `bash scripts/test.sh STEP...` runs only the named steps (the Makefile's targets do this).
# It checks and never fixes: no formatting, no header regeneration (see `make blessed-headers`).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

ALL_STEPS=(setup build fmt clippy deps headers python test pytest memcheck instructions)

# Disk: the run builds the workspace, its tests and a dozen plugin projects (each with its own
# target directory) in debug. With full debug info and incremental caches that came to more than
# a CI machine's disk held; line tables keep every backtrace's file and line, and nothing here is
# rebuilt after an edit, so the incremental caches buy nothing. Set for every cargo the tests start.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only

run() {
    echo "+ $*"
    "$@"
}

# Adds a rustup component when `cargo SUBCOMMAND` does not run.
need_component() {
    local component=$1 subcommand=$2
    cargo "$subcommand" --version >/dev/null 2>&1 && return
    command -v rustup >/dev/null || { echo "error: 'cargo $subcommand' is missing and there is no rustup to add $component" >&2; return 1; }
    run rustup component add "$component"
}

step_setup() {
    local tool
    for tool in cargo python3 cc; do
        command -v "$tool" >/dev/null || { echo "error: '$tool' is not on PATH; install it first" >&2; return 1; }
    done
    need_component rustfmt fmt
    need_component clippy clippy
    cargo --version
    python3 --version
    cc --version | head -n 1
}

# The tests load the plugin .so files from target/debug, so the whole workspace is built first.
step_build() { run cargo build --workspace; }
step_fmt() { run cargo fmt --all --check; }
step_clippy() { run cargo clippy --workspace --all-targets -- -D warnings; }
step_deps() { run python3 scripts/check_deps.py; }
step_headers() { run cargo test -p tomii-types --test headers; }

# Python gates (ruff, mypy) in a project-local virtualenv, with pinned tool versions.
PY_VENV=.venv-test
step_python_venv() {
    if ! "$PY_VENV/bin/python" -m pip --version >/dev/null 2>&1; then
        rm -rf "$PY_VENV"
        run python3 -m venv "$PY_VENV"
    fi
    run "$PY_VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r scripts/requirements-test.txt
}

step_python() {
    step_python_venv
    run "$PY_VENV/bin/ruff" check scripts python tests/python bench plugins examples
    run "$PY_VENV/bin/ruff" format --check scripts python tests/python bench plugins examples
    run "$PY_VENV/bin/mypy" --strict scripts python tests/python bench plugins
    # Each example is its own program (a run.py and a verify.py apiece), so each is checked alone.
    local example
    for example in examples/*/; do
        if compgen -G "$example*.py" >/dev/null; then run "$PY_VENV/bin/mypy" --strict "$example"; fi
    done
}

# Whether apt-get may install PACKAGES: yes on CI (`CI` set) and when stdin is not a terminal, so
# that unattended runs go on as they always did; else the answer to a y/N question (no by default).
may_install() {
    [[ -n ${CI:-} || ! -t 0 ]] && return 0
    local answer=""
    read -r -p "install $* with apt-get? [y/N] " answer
    [[ $answer =~ ^[yY]([eE][sS])?$ ]]
}

# Installs Debian PACKAGES with apt-get unless COMMAND is on PATH (or, for a library, unless the
# absolute path COMMAND exists: one of its files); the package lists are updated once when they do
# not know a package yet. Fails, saying what WHAT needs, if it cannot or may not.
need_apt() {
    local command=$1 what=$2
    shift 2
    { command -v "$command" >/dev/null || [[ $command == /* && -e $command ]]; } && return
    command -v apt-get >/dev/null || { echo "error: $what needs $*, and apt-get is not available to install them" >&2; return 1; }
    echo "$what needs $*, which are not installed"
    may_install "$@" || { echo "error: $what needs $*; install them, then rerun" >&2; return 1; }
    run apt-get install -y -q "$@" || { run apt-get update -q && run apt-get install -y -q "$@"; } || {
        echo "error: $what needs $*, and apt-get could not install them" >&2
        return 1
    }
}

# The Python package, built with maturin into the test virtualenv, and its tests; the browser
# tests (tests/python/browser.py) drive Debian's chromium through chromium-driver, the
# Cholesky example (examples/cholesky) links OpenBLAS and LAPACKE, and the head-to-head suite's
# oneTBB peer (bench/peers/tbb) is compiled by its test with g++ and oneTBB.
step_pytest() {
    need_apt chromium "the browser tests" chromium chromium-driver
    need_apt chromedriver "the browser tests" chromium-driver
    need_apt /usr/include/lapacke.h "the Cholesky example" libopenblas-dev liblapacke-dev
    need_apt g++ "the oneTBB peer's test" g++
    need_apt /usr/include/oneapi/tbb/flow_graph.h "the oneTBB peer's test" libtbb-dev
    step_python_venv
    VIRTUAL_ENV="$PWD/$PY_VENV" run "$PY_VENV/bin/maturin" develop --quiet
    run "$PY_VENV/bin/pytest" -q tests/python
}
step_test() { run cargo test --workspace; }

# Schedulers create and destroy their state once per run: a run under valgrind with definite leaks
# as errors catches a scheduler (Rust or C) that leaks it, and any invalid access on the way.
step_memcheck() {
    need_apt valgrind "the memcheck step" valgrind
    local scheduler
    for scheduler in fifo c-fifo; do
        run valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --suppressions=scripts/valgrind.supp \
            target/debug/tomii run tomii-core/tests/graphs/diamond.json --dylib target/debug/libtomii_synthetic.so \
            --workers 2 --slots 3 --frames 50 --scheduler "$scheduler" --quiet
    done
}

# The instructions-per-task command (bench/README.md, "Instructions per task") still runs and
# prints a figure for fifo and c-fifo. Debug build and small sizes: the figures are not checked.
step_instructions() {
    need_apt valgrind "the instructions step" valgrind
    local table=target/instructions-quick.md scheduler
    run target/debug/instructions --quick --schedulers fifo,c-fifo | tee "$table"
    for scheduler in fifo c-fifo; do
        grep -Eq "^\| $scheduler \| [0-9][0-9,.]* \| [0-9][0-9,.]* \|\$" "$table" ||
            { echo "error: no W1 and W4 figures for $scheduler in the table above" >&2; return 1; }
    done
}

steps=("$@")
[[ ${#steps[@]} -gt 0 ]] || steps=("${ALL_STEPS[@]}")
for step in "${steps[@]}"; do
    declare -F "step_$step" >/dev/null || { echo "error: unknown step '$step' (steps: ${ALL_STEPS[*]})" >&2; exit 2; }
done

current=""
trap 'rc=$?; [[ $rc -eq 0 || -z $current ]] || printf "\n==> FAILED in step %s (exit %d)\n" "$current" "$rc" >&2' EXIT

times=()
for i in "${!steps[@]}"; do
    current=${steps[i]}
    printf '\n==> [%d/%d] %s\n' $((i + 1)) ${#steps[@]} "$current"
    start=$SECONDS
    "step_$current"
    times+=("$(printf '%-8s %5ds' "$current" $((SECONDS - start)))")
done
current=""

printf '\n==> passed: %s\n' "${steps[*]}"
printf '    %s\n' "${times[@]}"
