"""The ``a2ad`` client commands as a whole, run as a user runs them: a server that is down,
bad flag values, bracketed text in errors, an unknown A2A version, and the help. The
commands one by one are in tests/cli/test_send.py, test_tasks_list.py,
test_tasks_watch.py, test_tasks_cancel.py and test_card.py; what they share is in
tests/cli/client_commands.py and tests/cli/conftest.py."""

from __future__ import annotations

import pytest

from ..conftest import free_port
from .client_commands import Server, a2ad, one_line_error


@pytest.mark.parametrize(
    "command",
    [
        ["send", "hi"],
        ["send", "hi", "--stream"],
        ["tasks", "list"],
        ["tasks", "get", "t-1"],
        ["tasks", "watch", "t-1"],
        ["tasks", "cancel", "t-1"],
        ["tasks", "cancel-overdue", "--yes"],
        ["card", "--json"],
    ],
)
def test_server_down_is_one_line_naming_the_url(command: list[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = a2ad(*command, "--url", url)
    assert done.returncode == 1
    said = one_line_error(done)
    assert url in said and "is the server running" in said
    assert done.stdout == ""


@pytest.mark.parametrize(
    "command",
    [
        ["tasks", "list", "--stale-after", "ten minutes"],
        ["tasks", "cancel-overdue", "--stale-after", "10x"],
        ["tasks", "list", "--state", "sleeping"],
        ["tasks", "list", "--state", "completed", "--stale-after", "1m"],
        ["send", "hi", "--timeout", "soon"],
        ["send", "hi", "--stream", "--no-wait"],
    ],
)
def test_bad_flag_values_exit_2_before_calling_the_server(command: list[str]) -> None:
    done = a2ad(*command, "--url", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 2
    said = one_line_error(done)
    assert command[-2] in said or "--no-wait" in said


def test_bracketed_text_in_an_error_is_printed_as_given(server10: Server) -> None:
    # Rich would read [bold] as markup; ids and URLs are printed as they are.
    said = one_line_error(server10("tasks", "get", "[bold]t-1[/bold]"))
    assert "task [bold]t-1[/bold] not found" in said
    down = f"http://[::1]:{free_port()}/[i]x"
    assert down in one_line_error(a2ad("tasks", "list", "--url", down))


def test_an_unknown_a2a_version_is_a_usage_error() -> None:
    done = a2ad("card", "--a2a-version", "2.0")
    assert done.returncode == 2
    assert "--a2a-version" in done.stderr and "Traceback" not in done.stderr


def test_a_message_to_an_ended_task_names_the_task(server10: Server) -> None:
    task = server10.start("echo done")
    done = server10("send", "more", "--task", task.id)
    assert done.returncode == 1
    said = one_line_error(done)
    assert task.id in said and server10.url in said


def test_help_offers_shell_completion_and_every_command() -> None:
    top = a2ad("--help")
    assert top.returncode == 0
    for word in ("--install-completion", "--show-completion", "serve", "send", "tasks", "card"):
        assert word in top.stdout, word
    tasks = a2ad("tasks", "--help")
    for word in ("list", "get", "watch", "cancel", "cancel-overdue"):
        assert word in tasks.stdout, word
