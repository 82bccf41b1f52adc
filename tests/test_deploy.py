"""What deploy/ and docs/deploy.md give users, checked as far as this machine allows.

The compose file and every ``a2ad`` command on the page must use commands and
flags that ``a2ad`` has, and store URLs it accepts; the configuration file they
mount must load in both ``serve`` and ``worker``; the image's HEALTHCHECK
command must pass against a real ``a2ad serve`` and fail once it is gone.
nginx (if installed) must accept deploy/nginx.conf, and, run with it in front
of a real ``a2ad serve``, pass a stream through event by event, a
``Last-Event-ID`` resume, and the address clients used (the agent card's URL).
Building and running the image needs a Docker daemon: that test skips, saying
so, where there is none.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
import yaml

from a2ad.cli import app

from .conftest import free_port
from .jsonrpc import rpc_body
from .served import Served
from .server.sse_client import Frame, frames

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
PAGE = ROOT / "docs" / "deploy.md"
V1 = {"A2A-Version": "1.0"}

# Issue 14: these come from the workers branch (`a2ad worker`, `serve --no-run`)
# and the procs branch (`serve --workers`). Where they are not merged yet, the
# flag test says so instead of failing.
BUILT_ELSEWHERE = {("worker", None), ("serve", "--no-run"), ("serve", "--workers")}


def cli_flags() -> dict[str, set[str]]:
    """Each ``a2ad`` command (``serve``, ``tasks list``, ...) and its flags."""
    found: dict[str, set[str]] = {}

    def walk(command: Any, name: str) -> None:
        # A group has commands (typer brings its own click: no isinstance).
        if hasattr(command, "commands"):
            for sub_name, sub in command.commands.items():
                walk(sub, f"{name} {sub_name}".strip())
            return
        flags = {"--help"}
        for param in command.params:
            flags.update(o for o in [*param.opts, *param.secondary_opts] if o.startswith("--"))
        found[name] = flags

    walk(typer.main.get_command(app), "")
    return found


def invocations(text: str) -> list[list[str]]:
    """Each ``a2ad …`` command in ``text``'s shell code (``sh`` blocks and inline
    spans), as words, line continuations joined."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    code = [body.replace("\\\n", " ") for language, body in blocks if language in ("sh", "")]
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S))
    found = []
    for piece in [*code, *spans]:
        for line in piece.splitlines():
            line = line.split(" #", 1)[0]
            match = re.search(r"(?:^|[ $(])a2ad ([a-z].*)", line)
            if match is not None:
                found.append(shlex.split(match[1].split("|")[0].split("&&")[0]))
    return found


def unknown_flags(args: list[str], flags: dict[str, set[str]]) -> list[tuple[str, str | None]]:
    """(command, flag) for each flag in ``args`` (an a2ad command line, without
    ``a2ad``) that the command does not take; (command, None) for no such command."""
    words = [w for w in args if not w.startswith("-")]
    for n in (2, 1):
        command = " ".join(words[:n])
        if command in flags:
            break
    else:
        return [(" ".join(words[:1]), None)]
    return [
        (command, flag)
        for flag in (w.split("=", 1)[0] for w in args if w.startswith("--"))
        if flag not in flags[command]
    ]


def check_all(found: list[tuple[str, str | None]], where: str) -> None:
    """Fail for a flag or command a2ad lacks, unless it is being built elsewhere
    (and not here yet); then skip, saying which."""
    pending = [x for x in found if x in BUILT_ELSEWHERE]
    wrong = [x for x in found if x not in pending]
    assert not wrong, f"{where} uses what a2ad does not have: {wrong}"
    if pending:
        pytest.skip(f"{where}: issue 14, not merged here yet: {sorted(set(pending), key=str)}")


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def a2ad_services() -> dict[str, list[str]]:
    """The compose services that run the image, and their a2ad command lines."""
    return {
        name: service["command"]
        for name, service in compose()["services"].items()
        if service.get("build", {}).get("dockerfile") == "deploy/Dockerfile"
    }


# --- the files and the page against the CLI ---


def test_the_compose_file_runs_fronts_and_workers_with_flags_a2ad_has() -> None:
    services = a2ad_services()
    assert set(services) == {"a2ad", "worker"}
    assert services["a2ad"][0] == "serve" and services["worker"][0] == "worker"
    for name, service in compose()["services"].items():
        if name in services:
            assert service["build"]["context"] == ".."
            assert (DEPLOY / ".." / service["build"]["dockerfile"]).is_file()
    flags = cli_flags()
    check_all(
        [bad for command in services.values() for bad in unknown_flags(command, flags)],
        "deploy/compose.yaml",
    )


def configured(name: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """The options ``a2ad NAME ARGS`` runs with under ``env`` (its --config file and
    A2AD_* variables read as the command reads them), by option name."""
    group = typer.main.get_command(app)
    root = group.context_class(group, info_name="a2ad")
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update({**{k: v for k, v in saved.items() if not k.startswith("A2AD_")}, **env})
        command = group.commands[name]  # type: ignore[attr-defined]
        ctx = command.make_context(name, list(args[1:]), parent=root)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return dict(ctx.params)


def service_env(service: dict[str, Any]) -> dict[str, str]:
    """A service's A2AD_* variables, its mounted files made local paths."""
    env = {k: str(v) for k, v in service.get("environment", {}).items() if k.startswith("A2AD_")}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("./") and env.get("A2AD_CONFIG") == target:
            env["A2AD_CONFIG"] = str(DEPLOY / source)
    return env


def test_the_compose_file_gives_every_process_the_same_store_and_every_front_a_shared_key() -> None:
    pytest.importorskip("asyncpg")
    from a2ad.store import store_from_url

    services = compose()["services"]
    options = {
        name: configured(command[0], command, service_env(services[name]))
        for name, command in a2ad_services().items()
    }
    assert all(service_env(services[n])["A2AD_CONFIG"].startswith(str(DEPLOY)) for n in options)
    urls = {o["store"] for o in options.values()}
    assert len(urls) == 1, urls  # fronts and workers on one database
    (url,) = urls
    store_from_url(url)  # a URL a2ad takes (its parameters included)
    assert "@" in url and ":" not in url.split("@")[0].split("//")[1]  # no password in it
    assert options["a2ad"]["agent"] == options["worker"]["agent"]  # the same agents
    assert options["a2ad"]["no_run"] is True
    key = options["a2ad"]["secret_key_file"]
    front = services["a2ad"]
    assert any(v.split(":")[1] == str(Path(key).parent) for v in front["volumes"])
    assert "keys" in compose()["volumes"]  # a named volume: one key for every replica
    # Running tasks get the grace before compose kills the container.
    assert options["a2ad"]["shutdown_grace"] == "10s" and front["stop_grace_period"] == "15s"


def test_the_compose_fronts_are_checked_ready_and_nginx_waits_for_them() -> None:
    services = compose()["services"]
    check = services["a2ad"]["healthcheck"]["test"]
    assert check == ["CMD", "a2ad", "health", "--ready"]
    assert unknown_flags(check[2:], cli_flags()) == []
    assert services["worker"]["healthcheck"] == {"disable": True}  # it serves no HTTP
    assert services["nginx"]["depends_on"]["a2ad"]["condition"] == "service_healthy"
    assert services["a2ad"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "test" in services["postgres"]["healthcheck"]


def dockerfile(instruction: str) -> str:
    (found,) = re.findall(rf"^{instruction} (.+)$", (DEPLOY / "Dockerfile").read_text(), re.M)
    return str(found)


def test_the_dockerfile_runs_a2ad_serve_on_every_interface_as_a_user_not_root() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1\d-slim$", text, re.M)
    assert dockerfile("USER") == "a2ad"
    assert yaml.safe_load(dockerfile("ENTRYPOINT")) == ["a2ad"]
    args = yaml.safe_load(dockerfile("CMD"))
    assert args[:3] == ["serve", "--host", "0.0.0.0"]
    assert unknown_flags(args, cli_flags()) == []
    assert '".[postgres]"' in text  # asyncpg, for the compose file's store
    assert dockerfile("EXPOSE") == "8000"
    # The default store is relative: it lands on the volume, which the user owns.
    assert yaml.safe_load(dockerfile("VOLUME")) == ["/data"]
    assert re.findall(r"^WORKDIR (.+)$", text, re.M)[-1] == "/data"
    assert "chown a2ad:a2ad /data" in text
    assert configured("serve", ["serve"], {})["store"] == "sqlite:///a2ad.db"


def healthcheck() -> list[str]:
    """The Dockerfile's HEALTHCHECK command, as exec words, run by this venv's a2ad."""
    options, _, command = dockerfile("HEALTHCHECK").partition(" CMD ")
    assert "--interval=" in options and "--timeout=" in options
    words = yaml.safe_load(command)
    assert isinstance(words, list) and words[0] == "a2ad", words
    return [str(Path(sys.executable).parent / "a2ad"), *words[1:]]


def run_check(words: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("A2AD_")}
    return subprocess.run(words, capture_output=True, text=True, timeout=30, env={**clean, **env})


def test_the_images_healthcheck_passes_on_a_served_a2ad_and_fails_when_it_is_gone(
    tmp_path: Path,
) -> None:
    check = healthcheck()
    config = tmp_path / "a2ad.toml"
    with Served("--store", "memory", "--shutdown-grace", "0") as served:
        served.expect(r"JSON-RPC:")
        done = run_check(check, {"A2AD_PORT": str(served.port)})
        assert done.returncode == 0, done.stderr
        config.write_text(f"port = {served.port}\n")  # a mounted file instead
        done = run_check(check, {"A2AD_CONFIG": str(config)})
        assert done.returncode == 0, done.stderr
        ready = [*check, "--ready"]  # compose's check of the fronts
        assert run_check(ready, {"A2AD_PORT": str(served.port)}).returncode == 0
        assert served.stop() == 0
    gone = run_check(check, {"A2AD_PORT": str(served.port)})
    assert gone.returncode == 1
    assert f"unhealthy: http://127.0.0.1:{served.port}/healthz" in gone.stderr


def test_every_a2ad_command_on_the_deploy_page_uses_flags_a2ad_has() -> None:
    text = PAGE.read_text()
    commands = invocations(text)
    assert len(commands) >= 5, commands
    flags = cli_flags()
    found = [bad for command in commands for bad in unknown_flags(command, flags)]
    # A flag named alone in the prose is one of serve's or worker's.
    for flag in sorted(set(re.findall(r"`(--[a-z][a-z-]*)", text))):
        if flag in flags["serve"] or flag in flags.get("worker", ()):
            continue
        if ("serve", flag) in BUILT_ELSEWHERE:
            found.append(("serve", flag))
        else:
            found.append(("worker", None) if "worker" not in flags else ("serve or worker", flag))
    check_all(found, "docs/deploy.md")


def test_the_deploy_page_shows_the_files_in_deploy_as_they_are() -> None:
    # The page quotes the nginx location block; it must be the file's.
    text = PAGE.read_text()
    shown = re.findall(r"^```nginx\n(.*?)^```$", text, re.M | re.S)
    assert shown, "the page shows no nginx configuration"
    conf = (DEPLOY / "nginx.conf").read_text()
    for block in shown:
        for line in block.strip().splitlines():
            if line.strip() and not line.strip().startswith("#") and line.strip() != "...":
                assert line.strip() in conf, f"{line.strip()!r} is not in deploy/nginx.conf"


# --- nginx ---


@pytest.fixture(scope="module")
def nginx() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if found is None:
        pytest.skip("nginx is not installed here (Debian: apt-get install nginx-light)")
    return found


def local_conf(folder: Path, upstream: int, listen: int) -> Path:
    """deploy/nginx.conf as it runs here: the instance at 127.0.0.1 (there is no
    host named a2ad), nginx on a free port, its logs and pid in ``folder``."""
    conf = (DEPLOY / "nginx.conf").read_text()
    assert "server a2ad:8000;" in conf and "listen 8080;" in conf
    conf = conf.replace("server a2ad:8000;", f"server 127.0.0.1:{upstream};")
    conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{listen};")
    conf = conf.replace("http {", f"http {{\n    access_log {folder}/access.log;", 1)
    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        conf = conf.replace("http {", f"http {{\n    {kind}_temp_path {folder}/{kind};", 1)
    path = folder / "nginx.conf"
    path.write_text(conf)
    return path


def nginx_args(nginx: str, folder: Path, conf: Path) -> list[str]:
    return [
        nginx,
        "-p",
        str(folder),
        "-e",
        str(folder / "error.log"),
        "-c",
        str(conf),
        "-g",
        f"pid {folder}/nginx.pid; daemon off;",
    ]


def test_nginx_accepts_the_config(nginx: str, tmp_path: Path) -> None:
    conf = local_conf(tmp_path, free_port(), free_port())
    done = subprocess.run(
        [*nginx_args(nginx, tmp_path, conf), "-t"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert "test is successful" in done.stderr


@pytest.fixture(scope="module")
def proxied(nginx: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of nginx, with deploy/nginx.conf, in front of a real ``a2ad serve``."""
    folder = tmp_path_factory.mktemp("nginx")
    with Served("--shutdown-grace", "0") as served:
        served.expect(r"JSON-RPC:")
        port = free_port()
        conf = local_conf(folder, served.port, port)
        proc = subprocess.Popen(
            nginx_args(nginx, folder, conf),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 10
            while True:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                try:
                    if httpx.get(f"{url}/.well-known/agent-card.json").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "nginx did not answer"
                time.sleep(0.1)
            yield url
        finally:
            proc.terminate()
            proc.wait(10)
            if proc.stderr is not None:
                proc.stderr.close()


async def stream(
    url: str, method: str, params: dict[str, Any], headers: dict[str, str] | None = None
) -> list[tuple[float, Frame]]:
    """The frames of a streaming call through nginx, each with when it arrived
    (seconds after the request)."""
    got = []
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        start = time.monotonic()
        async with http.stream(
            "POST", "/", json=rpc_body(method, params), headers={**V1, **(headers or {})}
        ) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            async for frame in frames(r):
                got.append((time.monotonic() - start, frame))
    return got


def message(text: str) -> dict[str, Any]:
    return {
        "message": {
            "messageId": f"m-{time.monotonic_ns()}",
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }
    }


def task_state(frame: Frame) -> str:
    result = frame.result
    if "task" in result:
        return str(result["task"]["status"]["state"])
    if "statusUpdate" in result:
        return str(result["statusUpdate"]["status"]["state"])
    return "artifact"


async def test_through_nginx_each_event_arrives_when_a2ad_sends_it(proxied: str) -> None:
    got = await stream(proxied, "SendStreamingMessage", message("sleep:1.5 through nginx"))
    states = [task_state(f) for _, f in got]
    assert states[-1] == "TASK_STATE_COMPLETED", states
    first, last = got[0][0], got[-1][0]
    # The first events came while the agent slept, not with the end of the stream.
    assert first < 1.0 and last >= 1.4, [round(t, 2) for t, _ in got]
    assert all(f.id is not None for _, f in got)


async def test_through_nginx_a_stream_resumes_after_its_last_event_id(proxied: str) -> None:
    live = await stream(proxied, "SendStreamingMessage", message("sleep:0.5 resume me"))
    task_id = live[0][1].result["task"]["id"]
    ids = [f.id for _, f in live]
    again = await stream(
        proxied, "SubscribeToTask", {"id": task_id}, headers={"Last-Event-ID": str(ids[0])}
    )
    assert [f.id for _, f in again] == ids[1:]
    assert task_state(again[-1][1]) == "TASK_STATE_COMPLETED"


def test_through_nginx_the_agent_card_names_the_address_clients_used(proxied: str) -> None:
    card = httpx.get(f"{proxied}/.well-known/agent-card.json", headers=V1).json()
    urls = [i["url"] for i in card["supportedInterfaces"]]
    assert urls and all(u.startswith(proxied + "/") for u in urls), urls


# --- backups, as the page says to make them ---


def page_lines(starting: str) -> list[str]:
    """The lines of the page's sh blocks that start with ``starting``."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    return [ln for b in blocks for ln in b.splitlines() if ln.startswith(starting)]


def test_a_sqlite_store_backed_up_while_it_serves_has_its_tasks(tmp_path: Path) -> None:
    (cli,) = page_lines("sqlite3 a2ad.db")
    (python,) = page_lines("python3 -c 'import sqlite3")
    with Served("--store", f"sqlite:///{tmp_path}/a2ad.db") as served:
        url = served.url
        sent = httpx.post(url, json=rpc_body("SendMessage", message("keep me")), headers=V1)
        task_id = sent.json()["result"]["task"]["id"]
        runs = [python.replace("python3", sys.executable, 1)]
        if shutil.which("sqlite3"):
            runs.append(cli)
        for command in runs:
            (tmp_path / "a2ad-backup.db").unlink(missing_ok=True)
            done = subprocess.run(
                command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=30
            )
            assert done.returncode == 0, done.stderr
            backup = sqlite3.connect(tmp_path / "a2ad-backup.db")
            try:  # the task, finished, is in the copy
                (state,) = backup.execute(
                    "SELECT state FROM tasks WHERE id = ?", (task_id,)
                ).fetchone()
            finally:
                backup.close()
            assert state == "TASK_STATE_COMPLETED"
        assert served.proc.poll() is None  # it served on, undisturbed


async def test_pg_dump_and_pg_restore_bring_a_schemas_tasks_back() -> None:
    asyncpg = pytest.importorskip("asyncpg")
    if not (shutil.which("pg_dump") and shutil.which("pg_restore")):
        pytest.skip("pg_dump and pg_restore are not installed here")
    (dump,) = page_lines("pg_dump ")
    (restore,) = page_lines("pg_restore ")
    from a2ad.store.postgres import PostgresStore

    from .postgres import SERVER, fresh_schema
    from .store.test_store_contract import new_task

    async with fresh_schema() as url:
        schema = url.rsplit("search_path=", 1)[1]
        task = new_task()
        async with PostgresStore(url) as store:
            await store.create(task)
        dump = dump.replace("--format=custom", f"--format=custom --schema={schema}")
        dump = dump.replace("a2ad-$(date +%F).dump", "backup.dump")
        restore = restore.replace("a2ad-2026-05-01.dump", "backup.dump")
        with tempfile.TemporaryDirectory() as folder:
            for command in (dump, None, restore):
                if command is None:  # lost after the backup
                    conn = await asyncpg.connect(url)
                    await conn.execute("DELETE FROM tasks")
                    await conn.close()
                    continue
                command = command.replace("postgresql://a2ad@db.internal/a2ad", SERVER)
                done = subprocess.run(
                    command, shell=True, cwd=folder, capture_output=True, text=True, timeout=60
                )
                assert done.returncode == 0, f"{command}\n{done.stderr}"
        async with PostgresStore(url) as store:
            restored = await store.get(task.id)
            assert restored is not None and restored.task == task


# --- docker ---


def test_docker_compose_accepts_the_file() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker is not installed here")
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"docker compose is not installed here: {probe.stderr.strip()[:200]}")
    done = subprocess.run(
        [docker, "compose", "-f", str(DEPLOY / "compose.yaml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "A2AD_DB_PASSWORD": "x"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_the_image_builds_and_its_healthcheck_passes() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker is not installed here")
    probe = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        said = (probe.stderr.strip() or probe.stdout.strip()).splitlines()[-1:]
        pytest.skip(f"no Docker daemon here: {' '.join(said)[:200]}")
    tag = f"a2ad-test:{time.monotonic_ns()}"
    built = subprocess.run(
        [docker, "build", "-f", str(DEPLOY / "Dockerfile"), "-t", tag, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    port = free_port()
    name = f"a2ad-test-{port}"
    try:
        run = [docker, "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:8000", tag]
        started = subprocess.run(run, capture_output=True, text=True, timeout=60)
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 90
        while True:
            state = subprocess.run(
                [docker, "inspect", "-f", "{{.State.Health.Status}}", name],
                capture_output=True,
                text=True,
            ).stdout.strip()
            if state == "healthy":
                break
            assert state == "starting" and time.monotonic() < deadline, state
            time.sleep(1)
        card = httpx.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json", timeout=10)
        assert card.status_code == 200
        inside = [docker, "exec", name, "sh", "-c", "id -u && ls /data"]
        said = subprocess.run(inside, capture_output=True, text=True).stdout.split()
        assert said[0] == "10001" and "a2ad.db" in said  # not root; the store on the volume
    finally:
        subprocess.run([docker, "rm", "-f", name], capture_output=True)
        subprocess.run([docker, "rmi", "-f", tag], capture_output=True)
