"""The external agent: any program, started once per proposal, that reads the space and the
history as JSON lines on stdin and answers the next candidate as one JSON line on stdout. The
protocol is README.md beside this file ("The agent protocol"); this module must follow it to the
letter, and never trust an answer: what it reads is only a proposal, for the verifier to judge.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import TomiiError
from .space import Candidate, TuneSpace
from .strategies import TrialRecord

__all__ = ["PROTOCOL", "PROTOCOL_VERSION", "Agent", "AgentError", "messages"]

#: The protocol's name and version: every message carries both, every answer the version.
PROTOCOL = "tomii-tune-agent"
PROTOCOL_VERSION = 1
#: How much of an agent's stderr (its last characters) a failure quotes.
QUOTED_STDERR = 400
#: The keys an answer may have.
_ANSWER_KEYS = {"version", "knobs", "graph", "note", "stop"}


class AgentError(TomiiError):
    """The agent cannot be used: it does not start, or it failed too many proposals in a row.
    The message names the agent's command; `result` holds the trials run until then."""

    result: Any = None


def messages(
    space: TuneSpace,
    history: Sequence[TrialRecord],
    *,
    objective: str,
    direction: str,
    budget: int,
    seed: int,
) -> list[dict[str, Any]]:
    """What an agent reads: the space, one line per finished trial, then the request."""
    header = {"protocol": PROTOCOL, "version": PROTOCOL_VERSION}
    lines: list[dict[str, Any]] = [
        {
            **header,
            "type": "space",
            "objective": {"name": objective, "direction": direction},
            "budget": budget,
            "seed": seed,
            **space.to_json(),
            "graph": space.graph,
        }
    ]
    lines += [{**header, "type": "trial", **record.to_json()} for record in history]
    lines.append(
        {**header, "type": "ask", "trial": len(history), "budget_left": budget - len(history)}
    )
    return lines


class Agent:
    """The agent strategy: `command` (a command line, split as a shell would, or a list) run
    once per proposal with `timeout_s`. A proposal that fails (the agent crashes, hangs, answers
    garbage) becomes a candidate the verifier rejects with the reason; `max_failures` failures
    in a row raise AgentError, as does an agent that cannot be started."""

    def __init__(
        self,
        space: TuneSpace,
        *,
        command: str | Sequence[str],
        objective: str = "throughput",
        direction: str = "max",
        budget: int = 50,
        seed: int = 0,
        timeout_s: float = 60.0,
        max_failures: int = 3,
        name: str = "agent",
        **_: Any,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise AgentError("the agent's command line is empty")
        self.command = shlex.join(self.argv)
        self.name = name
        self.space = space
        self.context = {"objective": objective, "direction": direction, "budget": budget}
        self.seed = seed
        self.timeout_s = timeout_s
        self.max_failures = max_failures
        self.failures = 0
        self.stopped = ""

    def ask(self, history: Sequence[TrialRecord]) -> Candidate | None:
        if self.stopped:
            return None
        lines = messages(self.space, history, seed=self.seed, **self.context)  # type: ignore[arg-type]
        text = "".join(json.dumps(line, default=str) + "\n" for line in lines)
        answer, problem = self._exchange(text)
        if not problem:
            candidate, problem = _read_answer(answer)
            if candidate is None and not problem:
                self.stopped = "the agent answered stop"
                return None
            if candidate is not None:
                self.failures = 0
                return candidate
        self.failures += 1
        reason = f"agent `{self.command}`: {problem}"
        if self.failures >= self.max_failures:
            raise AgentError(f"{reason} ({self.failures} failed proposals in a row; giving up)")
        return Candidate(problem=reason)

    def _exchange(self, text: str) -> tuple[str, str]:
        """Runs the agent once with `text` on stdin: (stdout, "") or ("", what went wrong)."""
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            raise AgentError(
                f"agent `{self.command}` cannot be started: {error.strerror or error}; give a "
                "command line that runs (the protocol: python/tomii/tune/README.md)"
            ) from None
        try:
            stdout, stderr = process.communicate(text.encode(), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            _kill(process)
            return "", f"did not answer within {self.timeout_s:g} s (killed)"
        except BrokenPipeError:
            stdout, stderr = process.communicate()
        if process.returncode != 0:
            said = stderr.decode(errors="replace")
            return "", f"{_exit(process.returncode)} without an answer{_quoted(said)}"
        try:
            return stdout.decode(), ""
        except UnicodeDecodeError as error:
            return "", f"answered garbage: not UTF-8 ({error.reason} at byte {error.start})"

    def tell(self, record: TrialRecord) -> None:
        pass


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()


def _exit(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


def _quoted(stderr: str) -> str:
    tail = stderr.strip()[-QUOTED_STDERR:]
    return f"; its stderr ends: {tail}" if tail else ""


def _read_answer(stdout: str) -> tuple[Candidate | None, str]:
    """The candidate an agent's stdout holds, or why it holds none ("answered garbage: ...");
    (None, "") for an answer that stops the search."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if len(lines) != 1:
        return None, f"answered garbage: {len(lines)} lines on stdout, the protocol wants one"
    try:
        answer = json.loads(lines[0])
    except json.JSONDecodeError as error:
        return None, f"answered garbage: not JSON ({error}): {lines[0][:120]!r}"
    except RecursionError:
        return None, f"answered garbage: JSON nested too deeply: {lines[0][:120]!r}"
    if not isinstance(answer, dict):
        return None, f"answered garbage: a JSON {type(answer).__name__}, not an object"
    if answer.get("version") != PROTOCOL_VERSION:
        return None, (
            f"answered garbage: version {answer.get('version')!r}, this tuner speaks version "
            f"{PROTOCOL_VERSION}"
        )
    unknown = sorted(set(answer) - _ANSWER_KEYS)
    if unknown:
        return None, f"answered garbage: unknown key(s) {', '.join(unknown)}"
    if answer.get("stop") is True:
        return None, ""
    knobs, graph, note = answer.get("knobs", {}), answer.get("graph"), answer.get("note", "")
    if not isinstance(knobs, Mapping):
        return None, "answered garbage: knobs must be an object of knob name → value"
    if graph is not None and not isinstance(graph, Mapping):
        return None, "answered garbage: graph must be a graph-format object"
    return Candidate(dict(knobs), None if graph is None else dict(graph), str(note)), ""
