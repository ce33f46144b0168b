"""Verifier-gated tuning (tomii.tune): every strategy finds the optimum of a synthetic objective,
the verifier rejects every edit that changes what a graph computes (and accepts the knobs' own),
the agent protocol round-trips and its failures end as documented, and a small real tuning run
goes through the whole machinery."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reference import SYNTHETIC

import tomii
from tomii.check.reference import expected_run
from tomii.cli import main as cli_main
from tomii.tune import COLUMNS, AgentError, Candidate, Verifier, build_space, checksum_twin
from tomii.tune.agent import PROTOCOL, PROTOCOL_VERSION
from tomii.tune.verifier import REFERENCE_FRAMES, output_problems, verify_run

#: A graph with every kind of edge: work[i] reads src[i] and waits for side; sink reads every
#: work result and is ordered after side by a barrier.
GRAPH: dict[str, Any] = {
    "name": "verify",
    "nodes": [
        {"name": "src", "function": "checksum", "factor": 4, "args": [1]},
        {"name": "side", "function": "checksum", "factor": 1, "args": [2]},
        {
            "name": "work",
            "function": "spin",
            "factor": 4,
            "args": [
                0,
                {"type": "$res", "predecessor": {"name": "src"}},
                {"type": "$dep", "predecessor": {"name": "side", "index": "all"}},
            ],
        },
        {
            "name": "sink",
            "function": "checksum",
            "factor": 1,
            "args": [
                {"type": "$res", "predecessor": {"name": "work", "index": "all"}},
                {"type": "$barrier", "predecessor": {"name": "side", "index": "all"}},
            ],
        },
    ],
}
#: The searched knobs of the verifier's tests: no scheduler, so no scheduler listing is needed.
KNOBS: dict[str, Any] = {"workers": [1, 2], "slots": None, "work.*": None, "src.*": None}

# ---------------------------------------------------------------------------------------------
# Strategies on a synthetic objective: nothing runs


SMALL = {"workers": [1, 2, 3, 4], "slots": [1, 2, 4, 8], "inline_continuation": None}
OPTIMUM = {"workers": 3, "slots": 4, "inline_continuation": True}


def peaked(knobs: dict[str, Any]) -> float:
    """Highest (0) at OPTIMUM, lower the further from it."""
    slots = [1, 2, 4, 8].index(knobs["slots"])
    off = abs(int(knobs["workers"]) - 3) + abs(slots - 2)
    return -float(off + (0 if knobs["inline_continuation"] else 1))


EXHAUSTIVE_AGENT = """
import itertools, json, sys
lines = [json.loads(line) for line in sys.stdin]
space = lines[0]
tried = [line["knobs"] for line in lines if line["type"] == "trial"]
dims = space["dimensions"]
for point in itertools.product(*(d["values"] for d in dims)):
    knobs = dict(zip((d["name"] for d in dims), point))
    if knobs not in tried:
        print(json.dumps({"version": 1, "knobs": knobs}))
        break
else:
    print(json.dumps({"version": 1, "stop": True}))
"""


def agent_script(tmp_path: Path, text: str, name: str = "agent.py") -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return [sys.executable, str(path)]


@pytest.mark.parametrize("strategy", ["random", "grid", "bayes", "agent"])
def test_each_strategy_finds_the_optimum_of_a_synthetic_objective(
    strategy: str, tmp_path: Path
) -> None:
    agent = agent_script(tmp_path, EXHAUSTIVE_AGENT) if strategy == "agent" else None
    result = tomii.tune(
        None, knobs=SMALL, objective=peaked, strategy=strategy, budget=32, seed=0,
        agent=agent, progress=False,
    )  # fmt: skip
    assert result.best is not None
    assert result.best["knobs"] == OPTIMUM
    assert result.best["value"] == 0
    assert all(row["valid"] for row in result.rows)
    assert [row["trial"] for row in result.rows] == list(range(len(result.rows)))


def test_grid_spreads_a_small_budget_over_every_knob() -> None:
    result = tomii.tune(None, knobs=SMALL, objective=peaked, strategy="grid", budget=8)
    points = [json.loads(row["knobs"]) for row in result.rows]
    assert len(points) == 8
    for name in SMALL:
        assert len({point[name] for point in points}) == 2, name


def test_a_minimised_objective_and_the_result_table(tmp_path: Path) -> None:
    def distance(knobs: dict[str, Any]) -> float:
        return -peaked(knobs)

    result = tomii.tune(None, knobs=SMALL, objective=distance, direction="min", strategy="grid",
                        budget=32, out=tmp_path / "out")  # fmt: skip
    assert result.best is not None and result.best["knobs"] == OPTIMUM
    best = [row["best_so_far"] for row in result.rows]
    assert best == sorted(best, reverse=True)
    header = (tmp_path / "out" / "trials.csv").read_text().splitlines()[0]
    assert header.split(",") == list(COLUMNS)
    for name in ("best.json", "space.json", "environment.json", "convergence.png"):
        assert (tmp_path / "out" / name).is_file(), name


# ---------------------------------------------------------------------------------------------
# The verifier


def verifier(*, run: bool = False, knobs: dict[str, Any] | None = None) -> Verifier:
    space = build_space(copy.deepcopy(GRAPH), None, KNOBS if knobs is None else knobs)

    def runner(
        graph: dict[str, Any], scheduler: str, options: dict[str, str], run: dict[str, Any], n: int
    ) -> list[str]:
        return verify_run(graph, scheduler, options, run, n, [str(SYNTHETIC)])

    return Verifier(space, runner=runner if run else None)


def edited(change: Any) -> dict[str, Any]:
    graph = copy.deepcopy(GRAPH)
    change(graph)
    return graph


def node(graph: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in graph["nodes"] if n["name"] == name)


def test_the_verifier_rejects_a_dropped_barrier() -> None:
    graph = edited(lambda g: node(g, "sink")["args"].pop())
    verdict = verifier().check(Candidate(graph=graph))
    assert (verdict.valid, verdict.invariant) == (False, "fixed_barriers")
    assert "$barrier of node 'sink' on 'side'" in verdict.reason


def test_the_verifier_rejects_a_removed_dep() -> None:
    graph = edited(lambda g: node(g, "work")["args"].pop())
    verdict = verifier().check(Candidate(graph=graph))
    assert (verdict.valid, verdict.invariant) == (False, "fixed_edges")
    assert "$dep of node 'work' on 'side'" in verdict.reason


@pytest.mark.parametrize(
    ("knobs", "invariant", "says"),
    [
        ({"slots": 0}, "domain", "slots: 0 is outside its domain"),
        ({"workers": True}, "domain", "True is not one of 1, 2"),
        ({"slots": 2.5}, "domain", "2.5 is not an integer"),
        ({"work.priority": "urgent"}, "domain", "'urgent' is not one of"),
        ({"work.use_workers": "0-1"}, "domain", "beyond the run's 1 worker(s)"),
        ({"work.group_size": 8}, "domain", "outside its domain 1..=4"),
        ({"frames": 10}, "fixed_run_knobs", "frames holds one value"),
        ({"pop_batch": 4}, "names", "pop_batch is held at 0"),
        ({"bogus": 1}, "names", "bogus is no knob"),
    ],
)
def test_the_verifier_rejects_a_knob_outside_its_domain_or_the_space(
    knobs: dict[str, Any], invariant: str, says: str
) -> None:
    verdict = verifier().check(Candidate(knobs))
    assert (verdict.valid, verdict.invariant) == (False, invariant)
    assert says in verdict.reason


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda g: node(g, "src")["args"].__setitem__(0, 7), "node 'src': args [1] → [7]"),
        (lambda g: node(g, "side").__setitem__("function", "noop"), 'function "checksum" → "noop"'),
        (lambda g: node(g, "src").__setitem__("factor", 2), "node 'src': factor 4 → 2"),
        (lambda g: g["nodes"].pop(1), "node 'side' is removed"),
    ],
)
def test_the_verifier_rejects_a_graph_that_computes_something_else(change: Any, says: str) -> None:
    verdict = verifier().check(Candidate(graph=edited(change)))
    assert not verdict.valid
    assert says in verdict.reason


def test_the_checksum_twin_tells_apart_graphs_that_compute_different_outputs() -> None:
    def expected(graph: dict[str, Any]) -> Any:
        return expected_run(checksum_twin(graph), frames=REFERENCE_FRAMES, workers=1)

    original = expected(GRAPH)
    assert output_problems(original, expected(copy.deepcopy(GRAPH))) == []
    for change in (
        lambda g: node(g, "work")["args"].__setitem__(0, 5),  # spin's argument: no output
        lambda g: node(g, "work").__setitem__("function", "noop"),  # nor noop's
        lambda g: node(g, "src")["args"].__setitem__(0, 7),
    ):
        problems = output_problems(original, expected(edited(change)))
        assert problems and "where the original computes" in problems[0]


def test_the_verifier_rejects_a_worker_count_that_changes_the_outputs() -> None:
    graph = edited(lambda g: node(g, "side")["args"].append({"type": "$workers"}))
    space = build_space(graph, None, {"workers": [1, 2]})
    verdict = Verifier(space).check(Candidate({"workers": 2}))
    assert (verdict.valid, verdict.invariant) == (False, "same_outputs")
    assert "node 'side'[0]" in verdict.reason
    assert Verifier(space).check(Candidate({"workers": 1})).valid


def test_the_verifier_accepts_legal_priority_and_group_size_changes() -> None:
    knobs = {"workers": 2, "work.priority": "high", "work.group_size": 2, "src.use_workers": "1-1"}
    for check in (verifier(), verifier(run=True)):
        verdict = check.check(Candidate(knobs))
        assert verdict.valid, verdict.reason
        assert verdict.graph is not None
        assert node(verdict.graph, "work")["priority"] == "high"
        assert node(verdict.graph, "work")["group_size"] == 2
    assert verdict.checks == ("names", "domains", "structure", "reference", "run")
    proposed = edited(lambda g: node(g, "work").update(priority="low", group_size=4))
    assert verifier(run=True).check(Candidate(graph=proposed)).valid


def test_worker_ranges_are_searched_within_the_most_workers_a_candidate_can_have() -> None:
    def ranges(knobs: dict[str, Any]) -> tuple[Any, ...]:
        return build_space(GRAPH, None, knobs).by_name["work.use_workers"].values

    assert ranges({"work.use_workers": None}) == (None, "0-0")
    assert ranges({"work.use_workers": None, "workers": 2}) == (None, "0-0", "0-1", "1-1")
    assert ranges({"work.use_workers": None, "workers": [1, 3]})[-1] == "2-2"


def test_the_verification_run_compares_the_real_outputs_with_the_reference() -> None:
    twin = checksum_twin(GRAPH)
    assert verify_run(twin, "fifo", {}, {"workers": 2, "slots": 2}, 3, [str(SYNTHETIC)]) == []


# ---------------------------------------------------------------------------------------------
# The agent protocol


LOGGING_AGENT = """
import json, sys
lines = [json.loads(line) for line in sys.stdin]
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(lines) + "\\n")
asked = lines[-1]["trial"]
print(json.dumps({"version": 1, "knobs": {"workers": 1 + asked % 4}, "note": f"ask {asked}"}))
"""


def test_the_agent_protocol_round_trips(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    agent = [*agent_script(tmp_path, LOGGING_AGENT), str(log)]
    result = tomii.tune(None, knobs=SMALL, objective=peaked, strategy="agent", agent=agent,
                        budget=3, seed=5)  # fmt: skip
    assert [row["note"] for row in result.rows] == ["ask 0", "ask 1", "ask 2"]
    assert [json.loads(row["knobs"])["workers"] for row in result.rows] == [1, 2, 3]
    exchanges = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(exchanges) == 3
    for asked, lines in enumerate(exchanges):
        assert {(m["protocol"], m["version"]) for m in lines} == {(PROTOCOL, PROTOCOL_VERSION)}
        space, *trials, ask = lines
        assert space["type"] == "space" and ask["type"] == "ask"
        assert (space["objective"], space["budget"], space["seed"]) == (
            {"name": "peaked", "direction": "max"}, 3, 5,
        )  # fmt: skip
        assert [d["name"] for d in space["dimensions"]] == list(SMALL)
        assert space["baseline"] == {"workers": 1, "slots": 1, "inline_continuation": False}
        assert (ask["trial"], ask["budget_left"]) == (asked, 3 - asked)
        assert [t["trial"] for t in trials] == list(range(asked))
        assert all(t["type"] == "trial" and t["valid"] for t in trials)
    last = exchanges[-1][1:-1]
    assert [t["value"] for t in last] == [peaked(json.loads(r["knobs"])) for r in result.rows[:2]]


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ("import sys; sys.exit(3)", "exited with status 3 without an answer"),
        ("import sys; sys.stderr.write('boom'); sys.exit(1)", "its stderr ends: boom"),
        ("import time; time.sleep(30)", "did not answer within 1 s (killed)"),
        ("print('hello')", "answered garbage: not JSON"),
        ('print(\'{"version": 2, "knobs": {}}\')', "answered garbage: version 2"),
        ("print('[1, 2]')", "answered garbage: a JSON list"),
        ("print('{\"version\": 1}'); print('{\"version\": 1}')", "answered garbage: 2 lines"),
        ("import sys; sys.stdout.buffer.write(b'\\xff{}\\n')", "answered garbage: not UTF-8"),
        (
            "print('{\"version\": 1, \"knobs\": {\"slots\": ' + '[' * 10**5 + ']' * 10**5 + '}}')",
            "answered garbage: JSON nested too deeply",
        ),
        (
            "print('{\"version\": 1, \"knobs\": {\"slots\": ' + '[' * 990 + ']' * 990 + '}}')",
            "slots",
        ),
    ],
)
def test_a_failing_agent_costs_its_trial_with_the_reason(
    script: str, says: str, tmp_path: Path
) -> None:
    agent = agent_script(tmp_path, script)
    result = tomii.tune(None, knobs=SMALL, objective=peaked, strategy="agent", agent=agent,
                        budget=1, agent_timeout_s=1)  # fmt: skip
    [row] = result.rows
    assert (row["valid"], row["invariant"]) == (False, "proposal")
    assert f"agent `{agent[0]} {agent[1]}`" in row["reason"]
    assert says in row["reason"]


def test_an_agent_failing_again_and_again_is_an_error_naming_it(tmp_path: Path) -> None:
    agent = agent_script(tmp_path, "import sys; sys.exit(2)", "broken_agent.py")
    with pytest.raises(AgentError, match="broken_agent.py.*3 failed proposals in a row") as caught:
        tomii.tune(None, knobs=SMALL, objective=peaked, strategy="agent", agent=agent, budget=10)
    assert len(caught.value.result.rows) == 2


def test_an_agent_that_cannot_start_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-agent")
    with pytest.raises(AgentError, match="no-such-agent` cannot be started"):
        tomii.tune(None, knobs=SMALL, objective=peaked, strategy="agent", agent=missing, budget=1)


def test_an_agents_illegal_proposal_is_rejected_and_the_search_goes_on(tmp_path: Path) -> None:
    answers = (tmp_path / "answers").resolve()
    answers.write_text('{"version": 1, "knobs": {"slots": 3}}\n{"version": 1, "knobs": {}}\n')
    script = (
        "import sys\n"
        'n = sum(1 for line in sys.stdin if \'"trial"\' in line and \'"type": "trial"\' in line)\n'
        f"print(open({str(answers)!r}).read().splitlines()[min(n, 1)])\n"
    )
    result = tomii.tune(None, knobs=SMALL, objective=peaked, strategy="agent",
                        agent=agent_script(tmp_path, script), budget=2)  # fmt: skip
    assert [(row["valid"], row["invariant"]) for row in result.rows] == [
        (False, "domain"),
        (True, ""),
    ]
    assert "slots: 3 is not one of" in result.rows[0]["reason"]


# ---------------------------------------------------------------------------------------------
# A real tuning run, end to end


def test_a_small_real_tuning_run_goes_through_the_whole_machinery(tmp_path: Path) -> None:
    knobs = {"scheduler": ["fifo", "work-stealing"], "sched_opts.work-stealing.lifo": None,
             "slots": [1, 2], "work.priority": None, "work.use_workers": None}  # fmt: skip
    result = tomii.tune(
        GRAPH, knobs=knobs, strategy="random", budget=4, frames=10, warmup=0, seed=1,
        out=tmp_path / "out", progress=False,
    )  # fmt: skip
    assert len(result.rows) == 4
    valid = [row for row in result.rows if row["valid"]]
    assert valid and result.best is not None
    for row in valid:
        assert row["checks"] == "names;domains;structure;reference;run"
        assert row["throughput_frames_per_s"] > 0 and row["repeats_valid"] == 1
    for row in result.rows:
        if not row["valid"]:
            assert row["invariant"] == "domain" and "use_workers" in row["reason"]
    assert result.best["run"]["scheduler"] in ("fifo", "work-stealing")
    assert (tmp_path / "out" / "convergence.png").stat().st_size > 0


def tune_file(tmp_path: Path, strategies: str, agent: str) -> Path:
    """A `tomii tune` file in `tmp_path`: `strategies` (TOML) with the agent script `agent.py`
    reading `agent`, two trials each over slots on GRAPH, results into results/."""
    (tmp_path / "agent.py").write_text(agent, encoding="utf-8")
    (tmp_path / "graph.json").write_text(json.dumps(GRAPH), encoding="utf-8")
    config = tmp_path / "tune.toml"
    config.write_text(
        f"strategies = {strategies}\n"
        'budget = 2\nframes = 5\nwarmup = 0\nout = "results"\n'
        'search = ["slots"]\n[values]\nslots = [1, 2]\n'
        '[graphs]\nfiles = ["graph.json"]\n',
        encoding="utf-8",
    )
    return config


def test_tomii_tune_runs_a_comparison_from_a_toml_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    strategies = '["grid", { agent = "{python} agent.py", label = "stand-in" }]'
    config = tune_file(tmp_path, strategies, EXHAUSTIVE_AGENT)
    assert cli_main(["tune", str(config), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| verify | grid |" in printed and "| verify | stand-in |" in printed
    summary = (tmp_path / "results" / "summary.csv").read_text().splitlines()
    assert len(summary) == 3
    assert (tmp_path / "results" / "convergence.png").is_file()


def test_tomii_tune_fails_naming_an_arm_that_never_made_a_proposal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent that exits without answering leaves its arm without a valid trial, for a reason
    in the arm, not in the graph: the command says which arm and why, keeps what it wrote, and
    exits non-zero."""
    strategies = '[{ agent = "{python} agent.py", label = "mute" }]'
    config = tune_file(tmp_path, strategies, "import sys; sys.exit(3)")
    assert cli_main(["tune", str(config), "--quiet"]) == 1
    printed = capsys.readouterr().err.splitlines()
    assert printed[0].startswith("warning: mute found no valid trial on verify: agent `")
    assert printed[0].endswith("exited with status 3 without an answer")
    assert printed[1] == "error: a strategy never made a proposal the verifier could read"
    assert len((tmp_path / "results" / "trials.csv").read_text().splitlines()) == 1 + 2


def test_a_config_with_an_unknown_key_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tune.toml"
    config.write_text('strategies = ["random"]\nbudgt = 3\n', encoding="utf-8")
    assert cli_main(["tune", str(config)]) == 1
    assert "unknown key(s) budgt in the file" in capsys.readouterr().err


#: Tunes GRAPH for far longer than the test waits; the second trial arms a Ctrl-C (SIGINT to the
#: process) that lands in a later trial's measurement or verification.
INTERRUPTED_TUNE = """\
import json, os, signal, sys, threading
import tomii

def on_trial(row):
    if row["trial"] == 1:
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()

result = tomii.tune(json.loads(sys.argv[1]), knobs={"slots": [1, 2, 4, 8]}, budget=500,
                    frames=2000, dylibs=[sys.argv[2]], progress=False, on_trial=on_trial,
                    out=sys.argv[3])
print(json.dumps({"interrupted": result.interrupted, "trials": len(result.rows)}))
"""


def test_ctrl_c_stops_the_search_and_keeps_the_finished_trials(tmp_path: Path) -> None:
    """Each trial is a sweep, which keeps a Ctrl-C to itself and returns what it has; the search
    must still stop there (it went on to the next trial), returning and saving the trials that
    finished, marked interrupted."""
    script = tmp_path / "tune_then_interrupt.py"
    script.write_text(INTERRUPTED_TUNE, encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(script), json.dumps(GRAPH), str(SYNTHETIC), str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    assert printed["interrupted"] is True
    assert 2 <= printed["trials"] < 500
    assert len((out / "trials.csv").read_text().splitlines()) == 1 + printed["trials"]
