"""One error base: every error a user sees carries its exit code and message; the CLI maps by the base alone."""

from __future__ import annotations

import ast
import importlib
import inspect
import signal
from pathlib import Path

import pytest

from debate_engine.errors import DebateError
from tests.test_architecture import ROOT, modules

INTERNAL = {
    "RejectedReply": "the summarizer's own retry signal; a failed summary becomes a record",
    "TruncatedReply": "the same, for a reply cut at the output limit",
    "WrongShape": "a person's answer in the wrong shape: asked again, never raised to the command line",
    "PromptError": "a prompt file's missing placeholder, raised while resolving, reported as a ConfigError",
    "HandedBack": "a worker handing a job back to the queue: caught by the worker",
    "FormErrors": "a viewer form's mistakes by field: shown on the form, with what was typed",
}
"""Exceptions that never reach the command line, and why."""


def exception_classes() -> dict[str, type[BaseException]]:
    found = {}
    for name in [*(m for m, _ in modules()), "debate_engine.errors"]:
        for attr, value in vars(importlib.import_module(name)).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
            ):
                found[attr] = value
    return found


def test_every_error_of_the_engine_has_the_one_base_or_says_why_not() -> None:
    stray = {n for n, cls in exception_classes().items() if not issubclass(cls, DebateError)} - set(
        INTERNAL
    )
    assert stray == set(), (
        f"exceptions that would reach the user without an exit code: {sorted(stray)}"
    )


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("InputError", 2),
        ("ConfigError", 2),
        ("ModelConfigError", 2),
        ("BudgetError", 2),
        ("DatabaseInputError", 2),
        ("ThreadBusy", 2),
        ("ProviderError", 3),
        ("CallFailed", 3),
        ("QueuedRunError", 3),
        ("LocalModelError", 3),
        ("SummarizationAborted", 4),
        ("StorageError", 5),
        ("OutputError", 6),
    ],
)
def test_each_error_carries_its_exit_code(name: str, code: int) -> None:
    assert exception_classes()[name].exit_code == code


def test_one_name_per_kind_of_error() -> None:
    """Every kind is named ``...Error`` once, on the base: no Failure, Trouble or Failed beside it, no alias."""
    classes = exception_classes()
    odd = sorted(
        n for n in classes if n.endswith(("Failure", "Trouble", "Failed")) and n != "CallFailed"
    )
    assert odd == [], f"name these ...Error: {odd}"
    aliases = {"UserError", "OutputFailed", "OutputTrouble", "StorageTrouble", "StorageFailure"}
    assert aliases & set(classes) == set(), (
        "a second name for InputError, OutputError or StorageError"
    )
    assert {"InputError", "ProviderError", "SummaryError", "StorageError", "OutputError"} <= set(
        classes
    )


def test_a_signal_s_exit_code_is_the_shell_s() -> None:
    stopped = exception_classes()["Stopped"]
    assert stopped(signal.SIGINT).code == 130 and stopped(signal.SIGTERM).code == 143  # type: ignore[call-arg]
    assert stopped(signal.SIGINT).message() == "interrupted"  # type: ignore[call-arg]


def test_the_command_line_maps_errors_by_the_base_alone() -> None:
    tree = ast.parse((ROOT / "app" / "cli" / "main.py").read_text())
    named = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.endswith(("Error", "Failed", "Failure", "Aborted", "Stopped"))
    }
    assert named == {"DebateError", "ProviderError"}, (
        named
    )  # ProviderError: a client's own error, wrapped


def test_the_base_imports_nothing_of_the_engine() -> None:
    source = (Path(ROOT) / "debate_engine" / "errors.py").read_text()
    assert "debate_engine." not in "".join(
        ast.unparse(n)
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Import | ast.ImportFrom)
    )
