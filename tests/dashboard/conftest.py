"""Headless Chromium for the dashboard's tests: Debian's ``chromium`` driven by
Playwright (``executable_path``), one browser per test module. A machine
without either skips these tests saying which is missing; CI (``.ci/run``)
installs both, so there they run."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("A2AD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = Path(__file__).parents[2] / "build" / "screenshots"


def chromium_or_skip() -> str:
    if not Path(CHROMIUM).exists():
        if os.environ.get("A2AD_REQUIRE_BROWSER"):
            pytest.fail(f"no Chromium at {CHROMIUM} (A2AD_REQUIRE_BROWSER is set)")
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set A2AD_CHROMIUM)")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    path = chromium_or_skip()
    if os.environ.get("A2AD_REQUIRE_BROWSER"):
        import playwright.sync_api as sync_api
    else:
        sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """API keys of three callers of one tenant and an operator, and their file."""
    from a2ad.server import auth

    path = str(tmp_path_factory.mktemp("keys") / "keys.toml")
    return {
        "ann": auth.add_key(path, "ann", tenants=["acme"]),
        "bob": auth.add_key(path, "bob", tenants=["acme"]),
        "cat": auth.add_key(path, "cat", tenants=["acme"]),
        "olga": auth.add_key(path, "olga", tenants=["acme"], roles=["operator"]),
        "path": path,
    }
