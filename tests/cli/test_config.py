"""``a2ad serve --config FILE``, the ``A2AD_*`` variables and ``a2ad config show``.

Precedence is flag > environment > file > default. Where it shows in what the
server does (the port it binds, the SQLite file it makes) a real ``a2ad serve``
is run; the other pairs are read back through ``a2ad config show``. Every option
of ``serve`` and ``worker`` is checked to be reachable by a key and a variable,
by walking the click command, so options added later are checked too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from a2ad.cli import app
from a2ad.cli.config import ENV_AGENTS, ConfiguredCommand, env_name, key_name, masked
from a2ad.store import store_from_url
from a2ad.store.postgres_url import parse_url

from ..conftest import free_port
from ..process_output import ProcessOutput
from ..served import A2AD

# `serve` run in this process configures logging: put it back after each test.
pytestmark = pytest.mark.usefixtures("restored_logging")

# Variables that keep a name a2ad gave them before the generated A2AD_<FLAG>
# (docs/operations.md, "Configuration", says why).
OWN_NAMES = {"agent": ENV_AGENTS, "auth": "A2AD_AUTH_FILE"}


def command(name: str) -> ConfiguredCommand:
    group = typer.main.get_command(app)
    found = group.commands[name]  # type: ignore[attr-defined]
    assert isinstance(found, ConfiguredCommand)
    return found


def clean_env() -> dict[str, str]:
    """This process's environment without any A2AD_ variable that could leak in."""
    return {k: v for k, v in os.environ.items() if not k.startswith("A2AD_")}


@pytest.fixture(autouse=True)
def no_a2ad_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("A2AD_"):
            monkeypatch.delenv(key)


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), env=env)
    return result


def show(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = invoke("config", "show", "--json", *args, env=env)
    assert result.exit_code == 0, result.output
    options: dict[str, Any] = json.loads(result.stdout)["options"]
    return options


def write(folder: Path, text: str, name: str = "a2ad.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


# --- precedence, through a real server ---


class Serving(ProcessOutput):
    """``a2ad serve ARGS`` with exactly ``env`` (no --port or --store added)."""

    expect_timeout = 30.0

    def __init__(self, *args: str, env: dict[str, str], cwd: Path) -> None:
        proc = subprocess.Popen(
            [str(A2AD), "serve", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**clean_env(), "COLUMNS": "200", **env},
        )
        self.watch(proc)

    def port(self) -> int:
        return int(self.expect(r"JSON-RPC:\s+http://127\.0\.0\.1:(\d+)/").group(1))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(10)
        self.reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture
def serving() -> Iterator[list[Serving]]:
    started: list[Serving] = []
    yield started
    for one in started:
        one.close()


def test_a_flag_beats_the_environment_which_beats_the_file_for_port_and_store(
    tmp_path: Path, serving: list[Serving]
) -> None:
    file_port, env_port, flag_port = free_port(), free_port(), free_port()
    config = write(tmp_path, f'port = {file_port}\nstore = "sqlite:///file.db"\n')
    env = {"A2AD_PORT": str(env_port), "A2AD_STORE": "sqlite:///env.db"}

    flagged = Serving("--config", str(config), "--port", str(flag_port), env=env, cwd=tmp_path)
    serving.append(flagged)
    assert flagged.port() == flag_port  # flag > env
    assert (tmp_path / "env.db").exists() and not (tmp_path / "file.db").exists()  # env > file
    flagged.close()

    from_env = Serving(env={**env, "A2AD_CONFIG": str(config)}, cwd=tmp_path)
    serving.append(from_env)
    assert from_env.port() == env_port  # env > file, the file named by $A2AD_CONFIG
    from_env.close()

    from_file = Serving("--config", str(config), env={}, cwd=tmp_path)
    serving.append(from_file)
    assert from_file.port() == file_port  # file > default
    assert (tmp_path / "file.db").exists()


def test_a_bad_file_stops_serve_before_it_listens_with_exit_2(tmp_path: Path) -> None:
    port = free_port()
    config = write(tmp_path, f"port = {port}\n\nmax-task = 5\n")
    done = subprocess.run(
        [str(A2AD), "serve", "--config", str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        env={**clean_env(), "COLUMNS": "200"},
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: {config}:3: unknown key 'max-task' (did you mean max-tasks?); "
        "the keys are the command's flags without the dashes"
    )
    assert not (tmp_path / "a2ad.db").exists()  # it never opened the store


# --- precedence, through config show ---


def test_each_source_is_named_with_its_value(tmp_path: Path) -> None:
    config = write(tmp_path, "# limits\n\nmax-tasks = 7\nrate-limit = 2.5\nmodel = 'm-file'\n")
    got = show(
        "--config",
        str(config),
        "--max-tasks",
        "9",
        env={"A2AD_MAX_TASKS": "8", "A2AD_RATE_LIMIT": "1.5"},
    )
    assert got["max-tasks"] == {"value": 9, "source": "flag", "flag": "--max-tasks"}
    assert got["rate-limit"] == {"value": 1.5, "source": "env", "env": "A2AD_RATE_LIMIT"}
    assert got["model"] == {"value": "m-file", "source": "file", "file": str(config), "line": 5}
    assert got["max-parts"] == {"value": 256, "source": "default"}


@pytest.mark.parametrize(
    ("file", "env", "flag", "wanted"),
    [
        (True, True, True, "flag"),
        (False, True, True, "flag"),
        (True, False, True, "flag"),
        (True, True, False, "env"),
        (True, False, False, "file"),
        (False, False, False, "default"),
    ],
)
def test_precedence_is_flag_then_env_then_file_then_default(
    tmp_path: Path, file: bool, env: bool, flag: bool, wanted: str
) -> None:
    args = ["--config", str(write(tmp_path, "max-history = 11\nno-run = true\n"))] if file else []
    variables = {"A2AD_MAX_HISTORY": "12", "A2AD_NO_RUN": "false"} if env else {}
    if flag:
        args += ["--max-history", "13"]
    got = show(*args, env=variables)
    value = {"flag": 13, "env": 12, "file": 11, "default": 1000}[wanted]
    assert (got["max-history"]["source"], got["max-history"]["value"]) == (wanted, value)
    if not flag:  # a flag that can only be turned on: the file's true, the env's false
        run = {"env": False, "file": True, "default": False}[wanted]
        assert (got["no-run"]["source"], got["no-run"]["value"]) == (wanted, run)


def test_the_text_output_names_each_value_and_where_it_came_from(tmp_path: Path) -> None:
    config = write(tmp_path, 'retention = "7d"\nagent = { stock = "echo", news = "echo" }\n')
    result = invoke("config", "show", "--config", str(config), env={"A2AD_PORT": "9001"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"# a2ad serve, configuration file: {config}"
    found = re.search(
        r'^retention\s+= "7d"  # ' + re.escape(f"{config}:1") + "$", result.stdout, re.M
    )
    assert found
    assert re.search(r'^agent\s+= \["stock=echo", "news=echo"\]  # .*:2$', result.stdout, re.M)
    assert re.search(r"^port\s+= 9001  # env A2AD_PORT$", result.stdout, re.M)
    assert re.search(r"^host\s+= \"127.0.0.1\"  # default$", result.stdout, re.M)
    assert re.search(r"^# default-agent \(not set\)  # default$", result.stdout, re.M)


# --- every option, by key and by variable ---


def sample(param: Any) -> tuple[Any, str]:
    """A value the option takes, as TOML and as an environment variable."""
    annotation = param.type_descriptor.annotation
    if param.multiple:
        return ["echo"], "echo"
    if annotation is bool:
        return (not param.default), str(not param.default).lower()
    if param.metavar == "DURATION":
        return "3s", "3s"
    if param.default is not None:
        value = param.default
    elif annotation is int:
        value = max(1, param.min or 0)
    elif annotation is float:
        value = max(1.0, param.min or 0)
    else:
        value = "x"
    return value, str(value)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value)


@pytest.mark.parametrize("name", ["serve", "worker"])
def test_every_option_is_reachable_by_a_file_key_and_an_a2ad_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    cmd = command(name)
    options = cmd.options()
    assert len(options) > 5
    lines = [f"{key_name(p)} = {toml_value(sample(p)[0])}" for p in options]
    config = write(tmp_path, "\n".join(lines) + "\n")
    from_file = cmd.make_context(name, ["--config", str(config)])
    for number, param in enumerate(options, 1):
        source = from_file.get_parameter_source(param.name)
        assert source is not None and source.name == "DEFAULT_MAP", key_name(param)
        assert from_file.meta["a2ad.config"].lines[key_name(param)] == number

    for param in options:
        wanted = OWN_NAMES.get(str(param.name), env_name(param))
        assert param.envvar == wanted, key_name(param)
        monkeypatch.setenv(wanted, sample(param)[1])
    from_env = cmd.make_context(name, [])
    for param in options:
        source = from_env.get_parameter_source(param.name)
        assert source is not None and source.name == "ENVIRONMENT", key_name(param)


def test_a2ad_agent_the_client_commands_variable_does_not_reach_serve() -> None:
    got = show(env={"A2AD_AGENT": "stock", ENV_AGENTS: "echo demo"})
    assert got["agent"] == {"value": ["echo", "demo"], "source": "env", "env": ENV_AGENTS}


# --- errors ---


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("prot = 8000\n", ":1: unknown key 'prot' (did you mean port?)"),
        ("\nport = '8000'\n", ':2: port = "8000": give an integer, not a string'),
        ("port = 70000\n", ":1: port = 70000: input should be less than or equal to 65535"),
        ("lease-seconds = 0.1\n", ":1: lease-seconds = 0.1: input should be greater than"),
        ("rate-limit = true\n", ":1: rate-limit = true: give a number, not a boolean"),
        ("no-run = 'yes'\n", ':1: no-run = "yes": give true or false, not a string'),
        ("agent = [1]\n", ":1: agent = [1]: give a string, not an integer"),
        ("task-timeout = 'soon'\n", ":1: task-timeout = \"soon\": 'soon' is not a duration"),
        ("max_tasks = 3\n", ":1: write max-tasks, not max_tasks: keys are the flags' names"),
        ("max-tasks = 3\n\nmax_tasks = 4\n", ":3: max_tasks is max-tasks (line 1) again"),
        ("[serve]\nport = 1\n", ":1: [serve]: the file is flat"),
        ("config = 'other.toml'\n", ":1: config: a configuration file can't name another one"),
        ("port = 1\nport = 2\n", ": not valid TOML: Cannot overwrite a value (at line 2"),
        ("port = \n", ": not valid TOML: Invalid value (at line 1, column 8)"),
    ],
)
def test_a_bad_file_is_an_error_naming_the_key_and_line(
    tmp_path: Path, text: str, said: str
) -> None:
    config = write(tmp_path, text)
    result = invoke("serve", "--config", str(config))
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: {config}{said}"), line


def test_a_missing_file_is_an_error_naming_where_it_was_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    by_flag = invoke("serve", "--config", str(missing))
    by_env = invoke("serve", env={"A2AD_CONFIG": str(missing)})
    assert by_flag.exit_code == by_env.exit_code == 2
    assert by_flag.output.strip() == (
        f"error: --config {missing}: can't read the configuration file: No such file or directory"
    )
    assert by_env.output.startswith(f"error: A2AD_CONFIG {missing}: can't read")


def test_an_unreadable_file_is_an_error(tmp_path: Path) -> None:
    # A folder: unreadable as a file even to root, who reads any mode.
    result = invoke("serve", "--config", str(tmp_path))
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: --config {tmp_path}: can't read the configuration file: Is a directory"
    )


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("A2AD_PORT", "http", "error: A2AD_PORT='http': input should be a valid integer"),
        ("A2AD_NO_RUN", "maybe", "error: A2AD_NO_RUN='maybe': input should be a valid boolean"),
        ("A2AD_SHUTDOWN_GRACE", "later", "error: A2AD_SHUTDOWN_GRACE='later': 'later' is not"),
        ("A2AD_MAX_PARTS", "0", "error: A2AD_MAX_PARTS='0': input should be greater than"),
        ("A2AD_NO_WORKER_WAIT", "0", "error: --no-worker-wait: '0': give a duration above 0"),
    ],
)
def test_a_bad_variable_is_an_error_naming_it(variable: str, value: str, said: str) -> None:
    result = invoke("serve", env={variable: value})
    assert result.exit_code == 2
    assert result.output.startswith(said), result.output


def test_a_bad_variable_a_flag_overrides_is_not_read() -> None:
    got = show("--port", "9", env={"A2AD_PORT": "http"})
    assert got["port"] == {"value": 9, "source": "flag", "flag": "--port"}


def test_serve_and_worker_share_a_file_each_reading_its_own_keys(tmp_path: Path) -> None:
    text = "concurrency = 3\nport = 9100\nlease-seconds = 20\nstore = 'postgresql://db/a2ad'\n"
    config = write(tmp_path, text)
    group = typer.main.get_command(app)
    root = group.context_class(group, info_name="a2ad")
    worker = command("worker").make_context("worker", ["--config", str(config)], parent=root)
    assert (worker.params["concurrency"], worker.params["lease_seconds"]) == (3, 20.0)
    got = show("--config", str(config))
    assert (got["port"]["value"], got["lease-seconds"]["value"]) == (9100, 20.0)
    assert "concurrency" not in got


def test_a_key_neither_command_takes_is_refused_by_both(tmp_path: Path) -> None:
    config = write(tmp_path, "concurrency = 3\nhost = '0.0.0.0'\nthreads = 4\n")
    for name in ("worker", "serve"):
        result = invoke(name, "--config", str(config))
        assert result.exit_code == 2
        assert result.output.startswith(f"error: {config}:3: unknown key 'threads'"), name


# --- secrets ---


def test_config_show_masks_a_store_urls_password_and_secret_query_parameters(
    tmp_path: Path,
) -> None:
    url = "postgresql://a2ad:hunter2@db:5432/a2ad?sslmode=require&password=also"
    got = show(env={"A2AD_STORE": url})
    assert got["store"]["value"] == (
        "postgresql://a2ad:***@db:5432/a2ad?sslmode=require&password=***"
    )
    result = invoke("config", "show", env={"A2AD_STORE": url})
    assert "hunter2" not in result.stdout and "also" not in result.stdout


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("api-key", "sk-123", "***"),
        ("token", "t0k", "***"),
        ("db-password", "pw", "***"),
        ("secret-key-file", "/keys/a2ad.key", "/keys/a2ad.key"),  # a path, not the key
        ("auth", "keys.toml", "keys.toml"),
        ("store", "postgresql://u@db/a2ad", "postgresql://u@db/a2ad"),
        ("token", None, None),  # nothing to hide
        ("store", "sqlite:///a2ad.db", "sqlite:///a2ad.db"),  # not rebuilt: the same text
        ("store", "sqlite:////srv/a.db", "sqlite:////srv/a.db"),
        (
            "urls",
            ["sqlite:///a.db", "x://u:p@h/?a=b&token=t"],
            ["sqlite:///a.db", "x://u:***@h/?a=b&token=***"],
        ),
    ],
)
def test_secrets_are_masked_by_the_last_word_of_their_key(
    key: str, value: str | None, shown: str | None
) -> None:
    assert masked(key, value) == shown


# --- what config show prints is what serve runs with, and can be pasted back ---

SHOWN_URLS = [
    # (given, shown): shown as given, but for a password
    ("sqlite:///a2ad.db", "sqlite:///a2ad.db"),
    ("sqlite:///data/tasks.db", "sqlite:///data/tasks.db"),
    ("sqlite:////srv/abs.db", "sqlite:////srv/abs.db"),
    ("sqlite", "sqlite"),
    ("memory", "memory"),
    (
        "postgresql://a2ad@db:5432/a2ad?sslmode=require",
        "postgresql://a2ad@db:5432/a2ad?sslmode=require",
    ),
    ("postgresql:///a2ad?host=/var/run/postgresql", "postgresql:///a2ad?host=/var/run/postgresql"),
    ("postgres://db/a2ad?application_name=a%20b", "postgres://db/a2ad?application_name=a%20b"),
    (
        "postgresql://a2ad:hunter2@db:5432/a2ad?sslmode=require&sslpassword=k3y",
        "postgresql://a2ad:***@db:5432/a2ad?sslmode=require&sslpassword=***",
    ),
    ("postgresql://:hunter2@/a2ad?host=/tmp", "postgresql://:***@/a2ad?host=/tmp"),
]


def served_store(url: str) -> Any:
    """What ``serve`` makes of a store URL: the file, the options, or the kind."""
    if url.startswith("postgres"):
        return parse_url(url)  # the whole of what a PostgreSQL store is given
    made = store_from_url(url)
    return getattr(made, "path", type(made).__name__)


@pytest.mark.parametrize(("given", "shown"), SHOWN_URLS)
def test_config_show_prints_the_store_url_serve_runs_with(
    tmp_path: Path, given: str, shown: str
) -> None:
    for got in (show("--store", given), show(env={"A2AD_STORE": given})):
        assert got["store"]["value"] == shown
    text = invoke("config", "show", "--store", given).stdout
    assert f"store                     = {json.dumps(shown)}  # flag --store\n" in text
    # Pasted back as a flag, a variable or a file's value, it is shown the same.
    config = write(tmp_path, f"store = {json.dumps(shown)}\n")
    for again in (
        show("--store", shown),
        show(env={"A2AD_STORE": shown}),
        show("--config", str(config)),
    ):
        assert again["store"]["value"] == shown
    # And serve makes of it what it makes of the URL given (a password aside).
    assert served_store(shown) == served_store(
        given.replace("hunter2", "***").replace("k3y", "***")
    )


def test_the_agent_serve_runs_by_default_is_shown() -> None:
    assert show()["agent"] == {"value": ["echo"], "source": "default"}


def test_the_text_output_is_a_configuration_file_giving_the_same_values(tmp_path: Path) -> None:
    first = write(tmp_path, "agent = { stock = 'echo', news = 'echo' }\nretention = '7d'\n")
    args = ["--config", str(first), "--store", "sqlite:////srv/abs.db", "--no-dashboard"]
    env = {"A2AD_PORT": "9001", "A2AD_RATE_LIMIT": "2.5"}
    wanted = {key: entry["value"] for key, entry in show(*args, env=env).items()}
    text = invoke("config", "show", *args, env=env).stdout
    pasted = write(tmp_path, text, name="pasted.toml")
    again = show("--config", str(pasted))
    assert {key: entry["value"] for key, entry in again.items()} == wanted
    unset = {key for key, value in wanted.items() if value is None}
    assert unset and all(again[key]["source"] == "default" for key in unset)
    assert all(again[key]["source"] == "file" for key in wanted.keys() - unset)


def test_serve_runs_with_what_config_show_printed(tmp_path: Path, serving: list[Serving]) -> None:
    port = free_port()
    absolute = tmp_path / "abs" / "tasks.db"
    absolute.parent.mkdir()
    args = ["--port", str(port), "--store", f"sqlite:///{absolute}", "--no-metrics"]
    text = invoke("config", "show", *args).stdout
    assert f'store                     = "sqlite:///{absolute}"' in text
    server = Serving("--config", str(write(tmp_path, text)), env={}, cwd=tmp_path)
    serving.append(server)
    server.expect(re.escape(f"a2ad serving agent echo (store sqlite {absolute}, no task cap)"))
    assert server.port() == port
