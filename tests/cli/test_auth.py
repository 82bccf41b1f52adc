"""``a2ad auth add-key`` and ``a2ad serve --auth``, run as a user runs them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import httpx

from ..jwks_server import AUDIENCE, ISSUER, Issuer
from ..served import Served, add_key, run_a2ad

SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "message/send",
    "params": {"message": {"role": "user", "parts": [{"text": "hello"}]}},
}


def test_add_key_prints_the_key_once_and_stores_only_its_hash_in_a_0600_file(
    tmp_path: Path,
) -> None:
    keys = tmp_path / "keys.toml"
    first = add_key(keys, "--principal", "alice", "--tenant", "a", "--tenant", "b")
    second = add_key(keys, "--principal", "ops", "--role", "operator")
    assert first != second
    text = keys.read_text()
    assert first not in text and second not in text
    assert keys.stat().st_mode & 0o777 == 0o600
    entries = tomllib.loads(text)["key"]
    assert [(e["principal"], e["tenants"], e["roles"]) for e in entries] == [
        ("alice", ["a", "b"], []),
        ("ops", [], ["operator"]),
    ]


def test_the_printed_key_works_against_serve_with_auth_and_nothing_else_does(
    tmp_path: Path,
) -> None:
    keys = tmp_path / "keys.toml"
    key = add_key(keys, "--principal", "alice")
    with Served("--auth", str(keys)) as s:
        url = s.url
        assert "Auth:       API keys from" in s.expect(r"Auth:.*")[0]
        with httpx.Client(timeout=10) as http:
            assert http.post(url + "/", json=SEND).status_code == 401
            wrong = http.post(url + "/", json=SEND, headers={"X-API-Key": key + "x"})
            assert wrong.status_code == 401
            ok = http.post(url + "/", json=SEND, headers={"Authorization": f"Bearer {key}"})
            assert ok.status_code == 200 and ok.json()["result"]["status"]["state"] == "completed"
        listed = run_a2ad("tasks", "list", "--url", url, "--token", key, "--json")
        assert listed.returncode == 0, listed.stderr
        denied = run_a2ad("tasks", "list", "--url", url, "--json")
        assert denied.returncode == 1
        assert "needs a credential" in denied.stderr and "-31401" in denied.stderr
        assert s.stop() == 0


def test_serve_reads_the_keys_file_from_the_environment(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    key = add_key(keys, "--principal", "alice")
    with Served(env={"A2AD_AUTH_FILE": str(keys)}) as s:
        with httpx.Client(timeout=10) as http:
            assert http.post(s.url + "/", json=SEND).status_code == 401
            assert http.post(s.url + "/", json=SEND, headers={"X-API-Key": key}).status_code == 200
        assert s.stop() == 0


def test_serve_without_auth_says_so_and_warns_off_loopback() -> None:
    with Served() as s:
        assert s.url.startswith("http://")
        assert "Auth:       off" in s.expect(r"Auth:.*")[0]
        assert s.stop() == 0
        assert "warning" not in s.output
    with Served("--host", "0.0.0.0") as s:
        s.expect(r"without auth: anyone")
        assert s.stop() == 0


def test_serve_with_a_bad_keys_file_exits_2_naming_it(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text("[[key]]\nprincipal = 'a'\n")
    done = run_a2ad("serve", "--auth", str(keys))
    assert done.returncode == 2
    assert f"keys file {keys}, key #1" in done.stderr and "sha256" in done.stderr


def test_serve_jwt_flags_need_issuer_and_audience(tmp_path: Path) -> None:
    done = run_a2ad("serve", "--auth-jwt-jwks", "https://idp.example/jwks.json")
    assert done.returncode == 2
    assert "--auth-jwt-issuer and --auth-jwt-audience" in done.stderr


def test_serve_refuses_a_key_whose_principal_a_jwt_would_have(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    add_key(keys, "--principal", f"{ISSUER}#alice")
    jwks = tmp_path / "jwks.json"
    with Issuer() as idp:
        idp.add_key("k1")
        idp.publish("k1")
        jwks.write_text(json.dumps(idp.jwks()))
    jwt_flags = ["--auth-jwt-jwks", str(jwks), "--auth-jwt-issuer", ISSUER]
    done = run_a2ad("serve", "--auth", str(keys), *jwt_flags, "--auth-jwt-audience", AUDIENCE)
    assert done.returncode == 2
    assert f"the principal '{ISSUER}#alice' is the one a JWT of {ISSUER}" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_principal_prefix_needs_the_jwks() -> None:
    done = run_a2ad("serve", "--auth-jwt-principal-prefix", "idp:")
    assert done.returncode == 2
    assert "--auth-jwt-principal-prefix need --auth-jwt-jwks" in done.stderr
