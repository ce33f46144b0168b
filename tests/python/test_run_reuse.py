"""A repeated `run_graph` of the same graph with the same options launches the run it made ready
before (python/tomii/run.py, `_PREPARED`): its results are those of a run made ready afresh, and
a changed graph, other options or a rebuilt kernel library make the run ready anew."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pykernels
import pytest
from reference import SYNTHETIC, checksum

import tomii
import tomii.run
from tomii._tomii import PreparedRun
from tomii.errors import ConfigError
from tomii.export import find_exported

#: What a run's report says that does not depend on its timing.
_FIGURES = ("frames", "tasks", "workers", "slots", "status", "graph_warnings")


def checksum_graph(width: int = 3) -> tomii.Graph:
    """`width` instances of `checksum` feeding one sink `checksum`."""
    graph = tomii.Graph()
    each = graph.node("each", func="checksum", factor=width, args=[tomii.INDEX])
    graph.node("sink", func="checksum", args=[each.out("all")])
    return graph


def expected_outputs(frames: int, width: int = 3) -> list[list[tuple[str, int, Any]]]:
    """The sink's output of `checksum_graph(width)` in each of `frames` frames."""
    outputs = []
    for frame in range(frames):
        each = [checksum("each", i, frame, [i]) for i in range(width)]
        outputs.append([("sink", 0, checksum("sink", 0, frame, each))])
    return outputs


def prepared() -> list[PreparedRun]:
    """The runs made ready and kept, least recently used first."""
    return list(tomii.run._PREPARED.values())


def figures(report: tomii.Report) -> dict[str, Any]:
    """The figures two runs of the same graph and options share; `per_node` by name, since the
    report orders nodes by their measured time."""
    per_node = sorted((n["name"], n["count"], n["invocations"]) for n in report["per_node"])
    return {**{key: report[key] for key in _FIGURES}, "per_node": per_node}


@pytest.fixture(autouse=True)
def no_runs_kept() -> Iterator[None]:
    tomii.run._PREPARED.clear()
    tomii.run._GIVEN.clear()
    yield
    tomii.run._PREPARED.clear()
    tomii.run._GIVEN.clear()


def test_a_repeated_run_is_launched_from_the_run_made_ready_with_a_fresh_runs_results() -> None:
    graph = checksum_graph()
    options: dict[str, Any] = {"frames": 5, "slots": 2, "workers": 2, "trace": True}
    first = graph.run(dylib=SYNTHETIC, **options)
    [kept] = prepared()
    again = [graph.run(dylib=SYNTHETIC, **options) for _ in range(3)]
    assert len(prepared()) == 1 and prepared()[0] is kept
    tomii.run._PREPARED.clear()
    fresh = graph.run(dylib=SYNTHETIC, **options)
    assert prepared()[0] is not kept
    for result in [first, *again]:
        assert result.outputs == fresh.outputs == expected_outputs(5)
        assert figures(result.report) == figures(fresh.report)
        assert result.trace is not None and fresh.trace is not None
        assert len(result.trace) == len(fresh.trace) == 5 * 4
    # Each launch is a run of its own: its own report, trace and clock.
    assert len({id(result.report) for result in again}) == 3
    assert len({result.report["wall_time_s"] for result in [first, *again]}) > 1


def test_a_graphs_repeated_run_finds_its_run_by_the_options_it_was_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    graph = checksum_graph()
    graph.run(dylib=SYNTHETIC, frames=2, workers=1)
    [kept] = prepared()
    # The key of what `Graph.run` was given leads to `run_graph`'s key of the same run.
    assert list(tomii.run._GIVEN.values()) == list(tomii.run._PREPARED)
    again = graph.run(dylib=SYNTHETIC, frames=2, workers=1)
    same = tomii.run_graph(graph.to_json(indent=None), dylibs=[SYNTHETIC], frames=2, workers=1)
    assert prepared() == [kept] and again.outputs == same.outputs == expected_outputs(2)
    # Another value, another type of the same value, or another scheduler path: made ready anew.
    graph.run(dylib=SYNTHETIC, frames=2, workers=2)
    graph.run(dylib=SYNTHETIC, frames=np.int64(2), workers=1)
    searched = [str(tmp_path), *filter(None, [os.environ.get("TOMII_SCHEDULER_PATH")])]
    monkeypatch.setenv("TOMII_SCHEDULER_PATH", os.pathsep.join(searched))
    graph.run(dylib=SYNTHETIC, frames=2, workers=1)
    assert len(prepared()) == 4 and len(tomii.run._GIVEN) == 4
    # A Tomii 1.2 keyword is never kept.
    assert graph.run(dylib=SYNTHETIC, max_streams=2).report["frames"] == 2
    assert len(prepared()) == 4


def test_a_changed_graph_is_made_ready_anew() -> None:
    graph = checksum_graph()
    graph.run(dylib=SYNTHETIC, frames=2)
    [before] = prepared()
    graph.node("extra", func="checksum", args=[7])
    changed = graph.run(dylib=SYNTHETIC, frames=2)
    assert len(prepared()) == 2 and prepared()[0] is before
    assert [name for name, _, _ in changed.outputs[0]] == ["sink", "extra"]
    assert changed.outputs[1][1] == ("extra", 0, checksum("extra", 0, 1, [7]))


def test_other_options_are_made_ready_anew_and_still_checked() -> None:
    graph = checksum_graph()
    assert graph.run(dylib=SYNTHETIC, frames=2, workers=1).report["frames"] == 2
    assert graph.run(dylib=SYNTHETIC, frames=3, workers=1).report["frames"] == 3
    assert graph.run(dylib=SYNTHETIC, frames=3, workers=2).report["workers"] == 2
    assert len(prepared()) == 3
    # True equals 1, and is still no worker count.
    with pytest.raises(ConfigError, match="workers is True"):
        graph.run(dylib=SYNTHETIC, frames=2, workers=True)


def test_a_rebuilt_kernel_library_is_loaded_again(tmp_path: Path) -> None:
    library = tmp_path / SYNTHETIC.name
    shutil.copyfile(SYNTHETIC, library)
    graph = checksum_graph()
    graph.run(dylib=library, frames=2)
    [before] = prepared()
    assert before.is_current()
    # A rebuild writes a new file in the library's place.
    library.unlink()
    shutil.copyfile(SYNTHETIC, library)
    assert not before.is_current()
    rebuilt = graph.run(dylib=library, frames=2)
    [after] = prepared()
    assert after is not before and after.is_current()
    assert rebuilt.outputs == expected_outputs(2)
    library.unlink()
    with pytest.raises(tomii.PluginError, match="no such file"):
        graph.run(dylib=library, frames=2)


def test_at_most_eight_runs_are_kept_the_most_recently_used() -> None:
    graphs = [checksum_graph(width) for width in range(1, 11)]
    for graph in graphs:
        graph.run(dylib=SYNTHETIC)
    graphs[3].run(dylib=SYNTHETIC)
    # Keys start with the graph's text.
    kept = [json.loads(key[0][0])["nodes"][0]["factor"] for key in tomii.run._PREPARED]
    assert kept == [3, 5, 6, 7, 8, 9, 10, 4]


def test_a_graph_file_and_tomii_1_2_keywords_make_the_run_ready_every_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "graph.json"
    checksum_graph().save_json(path)
    assert tomii.run_graph(path, dylibs=[SYNTHETIC], frames=2).outputs == expected_outputs(2)
    path.write_text(checksum_graph(width=2).to_json(), encoding="utf-8")
    assert tomii.run_graph(path, dylibs=[SYNTHETIC], frames=2).outputs == expected_outputs(2, 2)
    assert tomii.run_graph(checksum_graph().to_dict(), dylib=str(SYNTHETIC)).outputs
    assert prepared() == []


def test_python_kernels_found_in_the_registry_make_the_run_ready_every_time() -> None:
    name = find_exported(pykernels.double).name
    graph = {"nodes": [{"name": "doubled", "function": name, "args": [21]}]}
    for _ in range(2):
        assert tomii.run_graph(graph).outputs == [[("doubled", 0, 42)]]
    assert prepared() == []
    given = tomii.run_graph(graph, python_kernels=[find_exported(pykernels.double)])
    assert given.outputs == [[("doubled", 0, 42)]] and len(prepared()) == 1


def test_a_repeated_run_of_python_kernels_calls_them_each_time() -> None:
    graph = tomii.Graph()
    doubled = graph.py_node("doubled", fn=pykernels.double, factor=2, args=[21])
    graph.py_node("seen", fn=pykernels.describe, factor=2, args=[doubled.out()])
    results = [graph.run(frames=2) for _ in range(3)]
    assert len(prepared()) == 1
    assert all(result.outputs == results[0].outputs for result in results)
    assert len(results[0].outputs) == 2


def test_the_report_is_the_report_files_json(tmp_path: Path) -> None:
    graph = checksum_graph()
    file = tmp_path / "report.json"
    for _ in range(2):
        result = graph.run(dylib=SYNTHETIC, frames=3, report=file)
        written = json.loads(file.read_text(encoding="utf-8"))
        assert result.report == written
        assert list(result.report) == list(written)
        assert type(result.report) is tomii.Report
    assert len(prepared()) == 1


def test_a_run_that_fails_is_made_ready_once_and_fails_each_time() -> None:
    graph = tomii.Graph()
    graph.node("boom", func="fail", args=["it broke"])
    for _ in range(2):
        with pytest.raises(tomii.KernelError, match="it broke") as raised:
            graph.run(dylib=SYNTHETIC, frames=2)
        assert raised.value.result.report["status"] == "failed"  # type: ignore[attr-defined]
    assert len(prepared()) == 1
