"""bench/suite/headtohead/kernels.py and the peers' --kernels mode: the kernel DAG of
examples/pipeline ("quick") has the graph's tasks, edges and arguments; both peers run it with the
example's C kernels and end with a Tomii run's sink values; a failing kernel fails a peer with the
kernel's message; what the file cannot say is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reference import TARGET

from tomii import graphs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "suite"))

from headtohead import kernels

RAYON = TARGET / "tomii-peer-rayon"
TBB_HEADER = Path("/usr/include/oneapi/tbb/flow_graph.h")
ITEMS = 16  # examples/pipeline/workload.py SCALES["quick"]


@pytest.fixture(scope="module")
def pipeline() -> tuple[dict[str, Any], str]:
    (workload,) = graphs.workloads(ROOT / "examples" / "pipeline", scale="quick")
    (library,) = workload.dylibs
    return dict(workload.graph), library


@pytest.fixture(scope="module")
def dag_file(
    pipeline: tuple[dict[str, Any], str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    graph, library = pipeline
    path = tmp_path_factory.mktemp("kernels") / "pipeline.kdag"
    kernels.expand(graph, library).write(path)
    return path


def read_tasks(path: Path) -> list[tuple[str, int, str, list[int], list[str]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].split()[:2] == ["tomii-suite-kernels", "1"]
    inits = int(lines[2].split()[1])
    tasks = []
    for line in lines[3 + inits :]:
        node, instance, kernel, npreds, *rest = line.split()
        preds, (nargs, *args) = [int(p) for p in rest[: int(npreds)]], rest[int(npreds) :]
        assert int(nargs) == len(args)
        tasks.append((node, int(instance), kernel, preds, args))
    assert len(tasks) == int(lines[0].split()[2])
    return tasks


def test_the_kernel_dag_has_the_graphs_tasks_and_edges(
    pipeline: tuple[dict[str, Any], str], dag_file: Path
) -> None:
    graph, library = pipeline
    tasks = read_tasks(dag_file)
    assert dag_file.read_text(encoding="utf-8").splitlines()[1] == f"library {Path(library)}"
    # ingest ×16, transform ×16, aggregate, emit: 34 tasks, 16 + 16 + 1 edges.
    assert [(node, instance) for node, instance, *_ in tasks] == [
        *((n, i) for n in ("ingest", "transform") for i in range(ITEMS)),
        ("aggregate", 0),
        ("emit", 0),
    ]
    assert sum(len(preds) for *_, preds, _ in tasks) == 2 * ITEMS + 1
    reference = graphs._tasks(graph)  # the reference model's instance-level view of the graph
    assert [list(task.preds) for task in reference] == [preds for *_, preds, _ in tasks]
    # Results are arguments, in order; literals typed as Tomii types them.
    assert tasks[0][2:] == ("pl_ingest", [], ["usize=16"])
    assert tasks[ITEMS + 3][2:] == ("pl_transform", [3], ["res=3", "usize=256"])
    aggregate = tasks[2 * ITEMS]
    assert aggregate[4] == [f"res={ITEMS + i}" for i in range(ITEMS)]
    assert tasks[-1][2:] == ("pl_emit", [2 * ITEMS], [f"res={2 * ITEMS}"])
    assert kernels.expand(graph, library).sinks() == [("emit", 0)]


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The Rayon peer of the debug build and the oneTBB peer, compiled here."""
    if not RAYON.is_file():
        pytest.fail(f"{RAYON} is missing: run `cargo build --workspace` first")
    if not TBB_HEADER.is_file():
        missing = f"libtbb-dev is missing ({TBB_HEADER}): the oneTBB peer cannot be built"
        if os.environ.get("CI"):  # scripts/test.sh installs it there
            pytest.fail(missing)
        pytest.skip(missing)
    tbb = tmp_path_factory.mktemp("peers") / "tomii-peer-tbb"
    built = subprocess.run(
        ["bash", str(ROOT / "bench" / "peers" / "tbb" / "build.sh"), str(tbb)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return [tbb, RAYON]


def run_peer(peer: Path, dag: Path, frames: int, slots: int) -> subprocess.CompletedProcess[str]:
    command = [str(peer), "--kernels", str(dag), "--frames", str(frames), "--slots", str(slots)]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)


@pytest.mark.parametrize("slots", [1, 4])
def test_both_peers_end_with_tomiis_sinks(
    pipeline: tuple[dict[str, Any], str], dag_file: Path, peers: list[Path], slots: int
) -> None:
    graph, library = pipeline
    frames = 7  # ingest's items depend on the frame (mod 16): frames must not be mistaken
    expected = kernels.tomii_sinks(graph, library, frames, slots)
    earlier = kernels.tomii_sinks(graph, library, frames - 1, slots)
    assert expected != earlier
    for peer in peers:
        done = run_peer(peer, dag_file, frames, slots)
        assert done.returncode == 0, done.stderr
        line = json.loads(done.stdout)
        assert (line["threads"], line["frames"], line["tasks"]) == (2, frames, frames * 34)
        assert line["sinks"] == expected, peer.name
        assert kernels.compare_sinks(line["sinks"], expected) == ""
        assert "emit[0] is" in kernels.compare_sinks(earlier, expected)


def test_a_failing_kernel_fails_the_peer_with_its_message(
    dag_file: Path, peers: list[Path], tmp_path: Path
) -> None:
    lines = dag_file.read_text(encoding="utf-8").splitlines()
    lines[3 + 5] = lines[3 + 5].replace("usize=16", "str=41")  # ingest instance 5
    broken = tmp_path / "broken.kdag"
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for peer in peers:
        done = run_peer(peer, broken, 3, 2)
        assert done.returncode == 1, peer.name
        assert "node ingest instance 5" in done.stderr
        assert "kernel pl_ingest, argument 0 (items): expected a size_t" in done.stderr


def test_what_the_file_cannot_say_is_refused(pipeline: tuple[dict[str, Any], str]) -> None:
    graph, library = pipeline
    conditional = json.loads(json.dumps(graph))
    conditional["nodes"][3]["condition"] = {"op": "Gt", "args": [0], "value": 1}
    with pytest.raises(ValueError, match="node 'emit': fields \\['condition'\\]"):
        kernels.expand(conditional, library)
    grouped = json.loads(json.dumps(graph))
    grouped["nodes"][1]["args"][0]["predecessor"]["group_by"] = 2
    with pytest.raises(ValueError, match="node 'transform': edge"):
        kernels.expand(grouped, library)
    literal = {**graph, "initializations": [{"name": "n", "value": 3}]}
    with pytest.raises(ValueError, match="initialization 'n'"):
        kernels.expand(literal, library)
    assert os.path.isabs(kernels.expand(graph, library).library)
