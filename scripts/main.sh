#!/usr/bin/env bash
# The main job: `bash scripts/main.sh [SWEEP OPTIONS...]` from any directory.
# Installs the package (`pip install .`: release build, every shipped scheduler, the `tomii`
# command) into the project-local virtualenv .venv-main/ (or with `pip install --user` when venv
# cannot be created), then runs the scheduler sweep of experiments/which-scheduler-wins with
# `tomii sweep` (options such as --repeats are passed on). Results and figures go to out/main/.
# Needs only cargo, python3 (with pip) and a C compiler. Safe to rerun: it reuses the venv.
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "${BASH_SOURCE[0]}")/.."

VENV=.venv-main
REQUIREMENTS=scripts/requirements-main.txt
SWEEP=experiments/which-scheduler-wins/sweep.toml

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

# Prints the python that the sweep runs with, after installing the package into it.
# Progress goes to stderr so that stdout carries only the interpreter path.
setup_python() {
    local pip_quiet=(--disable-pip-version-check --quiet)
    if make_venv >&2; then
        run "$VENV/bin/python" -m pip install "${pip_quiet[@]}" -r "$REQUIREMENTS" >&2
        run "$VENV/bin/python" -m pip install "${pip_quiet[@]}" --no-build-isolation . >&2
        echo "$VENV/bin/python"
        return
    fi
    echo "python3 -m venv failed (is ensurepip missing? on Debian/Ubuntu: apt install python3-venv);" \
        "falling back to pip install --user" >&2
    local user=(--user --no-warn-script-location "${pip_quiet[@]}")
    if ! run python3 -m pip install "${user[@]}" -r "$REQUIREMENTS" >&2 ||
        ! run python3 -m pip install "${user[@]}" --no-build-isolation . >&2; then
        echo "error: could not install the package; install python3-venv, then rerun" >&2
        return 1
    fi
    echo python3
}

start=$SECONDS
printf '==> [1/2] the package (pip install ., release build)\n'
python=$(setup_python)
echo "sweep python: $python"

printf '\n==> [2/2] scheduler sweep (%s)\n' "$SWEEP"
status=0
run "$python" -m tomii.experiments "$SWEEP" --out out/main "$@" || status=$?

printf '\n==> main job finished in %ds (exit %d)\n' $((SECONDS - start)) "$status"
exit "$status"
