"""A resumed debate sends only the model calls that had not finished, and reports only those.

A loopback OpenAI-compatible server records every request of an uninterrupted run, of a run stopped while
one call hangs, and of its resume; the requests of the two are compared with those of the one. The stopped
run is a subprocess; the uninterrupted run and the resume go through the entry point in this process.
"""

from __future__ import annotations

import signal
from collections import Counter
from typing import Any

import pytest

from tests.support.debate_cli import background, cli_env, finished_calls, in_process, wait_for
from tests.support.openai_server import OpenAIServer
from tests.support.resume_debate import AGENTS, STOP_WAIT_S, TEAM

pytestmark = pytest.mark.integration  # SIGINT needs a process of its own


def section_lines(stderr: str, header: str, word: str) -> list[str]:
    """Progress lines containing ``word`` under the phase header ``header`` (up to the next header)."""
    found, inside = [], False
    for line in stderr.splitlines():
        if line.startswith("[round "):
            inside = line.strip() == header
        elif inside and word in line:
            found.append(line.strip())
    return found


@pytest.fixture(scope="module")
def stopped_against_server(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Against a loopback OpenAI-compatible server that records every request:

    an uninterrupted debate; then the same debate whose 6th call (the 3rd critique) hangs,
    stopped by SIGINT while it hangs, and resumed.
    """
    folder = tmp_path_factory.mktemp("server")
    args = ["--model", "openai:test-model", *TEAM]
    with OpenAIServer(words=40, hang_s=60) as server:
        env = cli_env(OPENAI_BASE_URL=server.base_url)
        whole = in_process(
            "run",
            *args,
            "--thread-id",
            "w",
            "--db",
            str(folder / "w.sqlite"),
            "--quiet",
            "p",
            env=env,
        )
        assert whole.returncode == 0, whole.stderr
        whole_prompts = server.prompts()
        server.requests.clear()

        server.faults.extend(
            [None] * 5 + ["hang"]
        )  # 3 proposals and 2 critiques answer; the 3rd critique hangs
        db = folder / "k.sqlite"
        with background(
            "run",
            *args,
            "--verbose",
            "--thread-id",
            "k",
            "--db",
            str(db),
            "p",
            log=folder / "run.err",
            env=env,
        ) as process:
            wait_for(
                process,
                lambda: len(server.requests) >= 6 and finished_calls(db) >= 5,
                "the 6th request",
                folder / "run.err",
            )
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=STOP_WAIT_S)
        first_prompts = server.prompts()
        server.requests.clear()

        resumed = in_process("resume", "k", "--db", str(db), "--verbose", env=env)
        assert resumed.returncode == 0, resumed.stderr
        return {
            "code": code,
            "whole": whole_prompts,
            "first": first_prompts,
            "resumed": server.prompts(),
            "first_err": (folder / "run.err").read_text(),
            "resumed_err": resumed.stderr,
        }


def test_a_resumed_run_sends_only_the_calls_that_had_not_finished(
    stopped_against_server: dict[str, Any],
) -> None:
    run = stopped_against_server
    assert run["code"] == 130
    first, resumed, whole = run["first"], run["resumed"], run["whole"]
    assert len(first) == 6
    assert first == whole[:6]  # same debate, same order (max-concurrency 1)
    answered, hung = first[:5], first[5]
    assert not set(answered) & set(resumed), "a call that had finished was sent again"
    assert resumed.count(hung) == 1  # the call cut off is made again, once
    # together the two runs sent exactly what one uninterrupted run sends
    assert Counter(answered) + Counter(resumed) == Counter(whole)
    assert len(resumed) == len(whole) - 5


def test_resume_progress_reports_only_the_critiques_that_had_not_finished(
    stopped_against_server: dict[str, Any],
) -> None:
    """Each call is announced when it finishes, so the stopped run showed the 2 critiques that finished
    and the resumed run shows only the other 4: 6 in all, none twice (the cut-off call never finished)."""
    header = "[round 1/2] critique"
    before = section_lines(stopped_against_server["first_err"], header, "critique done")
    after = section_lines(stopped_against_server["resumed_err"], header, "critique done")
    pairs = [
        f"{a} on {b}" for a in AGENTS for b in AGENTS if a != b
    ]  # the plan's order, one call at a time
    assert [line.split(":")[0] for line in before] == pairs[:2], before
    assert sorted(line.split(":")[0] for line in after) == sorted(pairs[2:]), after
