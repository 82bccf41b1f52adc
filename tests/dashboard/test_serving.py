"""How the dashboard's page and files are served (server/dashboard/): caching,
security headers, page routes, its path moved or turned off. No browser needed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from a2ad import create_app

from ..conftest import LiveServer

V1 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with LiveServer(create_app()) as live:
        yield live


def test_the_page_and_its_files_are_served_with_caching_headers(server: LiveServer) -> None:
    page = httpx.get(f"{server.url}/ui")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "no-cache"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    again = httpx.get(f"{server.url}/ui", headers={"If-None-Match": page.headers["etag"]})
    assert again.status_code == 304
    script = re.search(r'src="(/ui/assets/app\.[0-9a-f]+\.js)"', page.text)
    assert script is not None
    asset = httpx.get(server.url + script.group(1))
    assert asset.status_code == 200
    assert asset.headers["content-type"].startswith("text/javascript")
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert httpx.get(f"{server.url}/ui/assets/app.0000.js").status_code == 404
    deep = httpx.get(f"{server.url}/ui/tasks/whatever")  # a page route: the page itself
    assert deep.status_code == 200 and deep.text == page.text
    assert httpx.post(f"{server.url}/ui").status_code == 405
    assert "http://" not in page.text.replace(server.url, "")  # nothing from elsewhere


async def test_the_dashboard_can_be_moved_or_turned_off() -> None:
    moved = create_app(dashboard_path="/ops/tasks/")
    off = create_app(dashboard_path=None)

    async def status(app: Any, path: str) -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return (await c.get(path, headers=V1)).status_code

    assert await status(moved, "/ops/tasks") == 200
    assert await status(moved, "/ui") == 404
    assert await status(off, "/ui") == 404
    with pytest.raises(ValueError, match="A2A path"):
        create_app(dashboard_path="/tasks")
    with pytest.raises(ValueError, match="absolute path"):
        create_app(dashboard_path="ui")
    for taken in ("/a2ad", "/metrics", "/healthz"):
        with pytest.raises(ValueError, match="a path a2ad serves"):
            create_app(dashboard_path=taken)
