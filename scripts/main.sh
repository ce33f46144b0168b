#!/usr/bin/env bash
# The main job: `bash scripts/main.sh [SWEEP OPTIONS...]` from any directory.
# Installs the package with its test extra (`pip install '.[test]'`: release build, every shipped
# scheduler, the `tomii` command, and pytest for the tests of `tomii new` projects) into the
# project-local virtualenv .venv-main/ (or with `pip install --user` when venv cannot be created),
# then runs the two scheduler sweeps of experiments/real-workloads with `tomii sweep` (options
# such as --repeats are passed on to both): the examples' real workloads on this machine's
# workers, then simulated on 8 to 32 workers with the task costs measured here. Results and
# figures go to out/main/run/ and out/main/simulate/; it ends by saying how to use what it
# installed (`source .venv-main/bin/activate`). Needs cargo, python3 (with pip) and a C compiler;
# the Cholesky workload's OpenBLAS and LAPACKE are installed with apt-get when missing. Safe to
# rerun: it reuses the venv.
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "${BASH_SOURCE[0]}")/.."

VENV=.venv-main
REQUIREMENTS=scripts/requirements-main.txt
# The package with its test extra (pyproject.toml): pytest, which scheduler projects' tests need.
PACKAGE='.[test]'
SWEEPS=(experiments/real-workloads/run.toml experiments/real-workloads/simulate.toml)

run() {
    echo "+ $*"
    "$@"
}

# Creates $VENV unless a working one is there; returns non-zero if venv cannot make one.
make_venv() {
    if "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
        echo "reusing the virtualenv $VENV/"
        return 0
    fi
    rm -rf "$VENV" # a partial venv left by an earlier failure
    if run python3 -m venv "$VENV"; then
        return 0
    fi
    rm -rf "$VENV"
    return 1
}

# Says, before the package's install, that its build takes minutes (pip --verbose then shows
# cargo's progress).
announce_build() {
    echo "installing the package: a release build of the runtime and every shipped scheduler," \
        "about 6 minutes on 2 cores; cargo's lines follow"
}

# Prints the python that the sweep runs with, after installing the package into it.
# Progress goes to stderr so that stdout carries only the interpreter path.
setup_python() {
    local pip=(--disable-pip-version-check)
    if make_venv >&2; then
        run "$VENV/bin/python" -m pip install "${pip[@]}" -r "$REQUIREMENTS" >&2
        announce_build >&2
        run "$VENV/bin/python" -m pip install "${pip[@]}" --verbose --no-build-isolation "$PACKAGE" >&2
        echo "$VENV/bin/python"
        return
    fi
    echo "python3 -m venv failed (is ensurepip missing? on Debian/Ubuntu: apt install python3-venv);" \
        "falling back to pip install --user" >&2
    local user=(--user --no-warn-script-location "${pip[@]}")
    announce_build >&2
    if ! run python3 -m pip install "${user[@]}" -r "$REQUIREMENTS" >&2 ||
        ! run python3 -m pip install "${user[@]}" --verbose --no-build-isolation "$PACKAGE" >&2; then
        echo "error: could not install the package; install python3-venv, then rerun" >&2
        return 1
    fi
    echo python3
}

# Says how to use what setup_python installed for the interpreter $1: the virtualenv to activate,
# or where `pip install --user` put the tomii command.
usage_note() {
    local python=$1
    if [[ $python == "$VENV/bin/python" ]]; then
        printf '\nThe package, the tomii command and pytest are in %s/. To use them, in each new shell:\n' "$VENV"
        printf '    source %s/bin/activate\n' "$PWD/$VENV"
        return
    fi
    local bin
    bin="$(python3 -m site --user-base)/bin"
    printf '\nThe package and pytest are installed with pip install --user: python3 imports tomii, and\n'
    printf 'the tomii command is in %s. If that is not on PATH:\n' "$bin"
    printf '    export PATH="%s:$PATH"\n' "$bin"
}

# The Cholesky workload's kernels link OpenBLAS and LAPACKE (Debian: libopenblas-dev,
# liblapacke-dev): installed with apt-get when their header is missing, else the job stops here.
need_blas() {
    [[ -e /usr/include/lapacke.h ]] && return
    echo "the Cholesky workload needs OpenBLAS and LAPACKE: installing libopenblas-dev liblapacke-dev"
    if command -v apt-get >/dev/null &&
        { run apt-get install -y -q libopenblas-dev liblapacke-dev ||
            { run apt-get update -q && run apt-get install -y -q libopenblas-dev liblapacke-dev; }; }; then
        return
    fi
    echo "error: install libopenblas-dev and liblapacke-dev (or your system's OpenBLAS with LAPACKE), then rerun" >&2
    return 1
}

start=$SECONDS
printf '==> [1/3] the workloads'"'"' system libraries, and the package (pip install %s, release build)\n' "$PACKAGE"
need_blas
python=$(setup_python)
echo "sweep python: $python"

status=0
printf '\n==> [2/3] real workloads on this machine (%s; about 10 minutes at the defaults)\n' "${SWEEPS[0]}"
run "$python" -m tomii.experiments "${SWEEPS[0]}" --out out/main/run "$@" || status=$?
if ((status == 0)); then
    printf '\n==> [3/3] the same workloads simulated on 8 to 32 workers (%s; about 5 minutes)\n' "${SWEEPS[1]}"
    run "$python" -m tomii.experiments "${SWEEPS[1]}" --out out/main/simulate "$@" || status=$?
fi

printf '\n==> main job finished in %ds (exit %d)\n' $((SECONDS - start)) "$status"
usage_note "$python"
exit "$status"
