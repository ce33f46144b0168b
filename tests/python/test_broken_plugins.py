"""Every broken C scheduler of tomii-core/tests/broken_plugins.rs, through `sweep()` and `check()`
as well as the command line: each ends within its limit, its rows invalid (or its card failing)
with a reason that names the plugin, and the healthy scheduler beside it unharmed.

The fixtures are the C sources of tomii-core/tests/c, compiled here against the real header."""

from __future__ import annotations

from pathlib import Path

import pytest
from reference import compile_c_scheduler

from tomii import graphs
from tomii.check import check
from tomii.experiments import sweep

#: name → (fixture source, its `-D` macros, what the reason says). A name is also the library's
#: stem (`libNAME.so`), so the sweep labels its rows NAME. None: a scheduler that only runs slowly.
BROKEN: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "drop": ("broken_runtime.c", ("-DFAULT_DROP",), "stalled"),
    "duplicate": ("broken_runtime.c", ("-DFAULT_DUPLICATE",), "returned the same task twice"),
    "garbage": ("broken_runtime.c", ("-DFAULT_GARBAGE",), "which the host never issued"),
    "over-max": (
        "broken_runtime.c",
        ("-DFAULT_OVERFLOW",),
        "pop reported 4 tasks for a buffer of 3",
    ),
    "error": ("broken_runtime.c", ("-DFAULT_ERROR",), "injected C error"),
    "sleepy": ("crash_sched.c", ("-DSLEEP_POP_US=500",), None),
    "pop-hang": ("crash_sched.c", ("-DHANG_POP",), "did not return from pop"),
    "push-hang": ("crash_sched.c", ("-DHANG_PUSH_AFTER",), "did not return from push"),
    "segfault": ("crash_sched.c", ("-DCRASH_SEGFAULT",), "killed by SIGSEGV (signal 11)"),
    "abort": ("crash_sched.c", ("-DCRASH_ABORT",), "killed by SIGABRT (signal 6)"),
    "exit": ("crash_sched.c", ("-DCRASH_EXIT",), "exited with status 3"),
    "overrun": ("crash_sched.c", ("-DCRASH_OVERRUN",), "wrote past the end of the 3 descriptors"),
    "major": ("bad_sched.c", ("-DBAD_MAJOR",), "scheduler ABI v2"),
    "small-table": ("bad_sched.c", ("-DBAD_SIZE=40",), "scheduler table is 40 bytes"),
    "null-push": ("bad_sched.c", ("-DNULL_PUSH",), "NULL `push` callback"),
    "null-state": ("crash_sched.c", ("-DNULL_CREATE",), "NULL state"),
}
#: The limits the broken runs are given.
LIMITS = {"stall_timeout_ms": [300], "scheduler_call_timeout_ms": [300], "pop_batch": [3]}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("broken")
    return {
        name: compile_c_scheduler(source, directory / f"lib{name}.so", *defines)
        for name, (source, defines, _) in BROKEN.items()
    }


def test_every_broken_scheduler_costs_only_its_own_rows(built: dict[str, Path]) -> None:
    result = sweep(
        [*built.values(), "fifo"],
        [graphs.map_reduce(4, 2, cost=graphs.Fixed(2))],
        LIMITS,
        repeats=1,
        warmup=0,
        frames=30,
        progress=False,
        trial_timeout_s=30,
    )
    rows = {row["scheduler"]: row for row in result.rows}
    assert sorted(rows) == sorted([*BROKEN, "fifo"]) and not result.interrupted
    assert rows["fifo"]["valid"], rows["fifo"]["problem"]
    for name, (_, _, says) in BROKEN.items():
        row = rows[name]
        if says is None:
            assert row["valid"], f"{name}: {row['problem']}"
            continue
        assert not row["valid"], name
        assert says in row["problem"], f"{name}: {row['problem']}"
        named = (f"scheduler {name}", str(built[name]), '"c-broken"', '"c-crash"', '"bad"')
        assert any(words in row["problem"] for words in named), f"{name}: {row['problem']}"


@pytest.mark.parametrize("name", [name for name, (_, _, says) in BROKEN.items() if says])
def test_check_fails_every_broken_scheduler_without_raising(
    built: dict[str, Path], name: str
) -> None:
    card = check(
        built[name], max_examples=2, seed=0, stall_timeout_ms=300, scheduler_call_timeout_ms=300
    )
    assert not card.passed, f"{name}\n{card}"
    assert str(built[name]) in str(card)
    for failed in (result for result in card.results if not result.passed):
        assert failed.problems and failed.reproduce, f"{name}\n{card}"
