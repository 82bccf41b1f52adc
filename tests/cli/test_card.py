"""``a2ad card``, run as a user runs it against a real a2ad and ``a2ad serve``: the agent, its
interfaces and skills; the URL, version and token from the environment."""

from __future__ import annotations

from .client_commands import Server, a2ad, one_line_error, parsed, serve


def test_card_shows_the_agent_its_interfaces_and_skills(server: Server) -> None:
    done = server("card")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "scripted" in out and "driven by the first word" in out
    assert f"JSONRPC    {server.url}/  A2A 1.0, 0.3" in out
    assert "streaming: yes" in out
    assert "skills (1)" in out
    assert f"speaks A2A {server.version}" in out


def test_card_shows_each_interface_of_a2ad_serve_once_with_its_versions() -> None:
    # The card names each twice: in supportedInterfaces (1.0 and 0.3) and in
    # the 0.3 fields (url, preferredTransport, additionalInterfaces).
    from ..served import Served

    with Served("--store", "memory") as served:
        url = served.url
        done = a2ad("card", "--url", url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("interfaces") + 1
    assert lines[start : start + 3] == [
        f"  JSONRPC    {url}/  A2A 1.0, 0.3",
        f"  HTTP+JSON  {url}/  A2A 1.0, 0.3",
        "  this client speaks A2A 1.0 to it (chosen from this card)",
    ]
    # The card's extension by its URI, not as a Python list of dicts.
    assert "  extension urn:a2ad:ext:push-delivery:v1" in lines
    assert "{'" not in done.stdout


def test_card_json_is_the_card_as_served(server10: Server) -> None:
    card = parsed(server10("card", "--json"))
    assert card["name"] == "scripted"
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0", "0.3"}


def test_url_and_version_come_from_the_environment(server10: Server) -> None:
    done = a2ad("card", env={"A2AD_URL": server10.url, "A2AD_A2A_VERSION": "0.3"})
    assert done.returncode == 0, done.stderr
    assert "speaks A2A 0.3" in done.stdout


def test_token_is_sent_as_a_bearer_token() -> None:
    for server in serve("1.0", token="s3cret"):
        refused = server("tasks", "list")
        assert refused.returncode == 1
        assert server.url in one_line_error(refused)
        done = a2ad("tasks", "list", "--url", server.url, env={"A2AD_TOKEN": "s3cret"})
        assert done.returncode == 0, done.stderr
        assert "no tasks" in done.stdout
