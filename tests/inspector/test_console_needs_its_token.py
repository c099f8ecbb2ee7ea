"""The console is for this machine or for holders of its token: beyond loopback it will not
start without one, and with one every page and API answers 401 until the token is shown
(as a Bearer header, or through the login form's HttpOnly cookie)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from tests.cli.helpers import run_cli
from threadline.backends.parts import records_for
from threadline.backends.sql import SqlConversationStore
from threadline.config import ConfigError, load_settings
from threadline.inspector.console import console_app, standalone_app
from threadline.inspector.console.auth import require_safe_bind
from threadline.inspector.redaction import Redactor

TOKEN = "console-token-7e1b9f-long-enough"


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """A console with a token on 127.0.0.1, and every path it serves."""
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        records = records_for(store)
        app = console_app(records=records, store=store, redactor=Redactor(), token=TOKEN)
        paths = []
        for resource in app.router.resources():
            info = resource.get_info()
            path = info.get("path") or info.get("formatter") or info.get("prefix", "")
            paths.append("/console" + path.replace("{record_id}", "r1") + (
                "/style.css" if "prefix" in info else ""))
        runner = web.AppRunner(standalone_app(app))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            yield f"http://127.0.0.1:{port}", paths
        finally:
            await runner.cleanup()


async def test_every_page_and_api_answers_401_without_the_token(
        console: tuple[str, list[str]]) -> None:
    base, paths = console
    assert len(paths) >= 10 and "/console/api/conversations" in paths
    async with aiohttp.ClientSession() as session:
        for path in paths:
            for method in ("GET", "POST"):
                async with session.request(method, base + path,
                                           allow_redirects=False) as response:
                    if path.endswith("/login") and method == "POST":
                        assert response.status == 401  # an empty form is a wrong token
                    elif response.status != 405:
                        assert response.status == 401, (method, path)
                    if "/api/" in path and response.status == 401:
                        assert (await response.json())["error"].startswith("unauthorized")
        async with session.get(base + "/console/api/conversations",
                               headers={"Authorization": "Bearer wrong-token"}) as response:
            assert response.status == 401


async def test_the_token_opens_it_by_header_or_by_the_login_form(
        console: tuple[str, list[str]]) -> None:
    base, _ = console
    # A browser keeps cookies of 127.0.0.1; aiohttp's client does only when told to.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get(base + "/console/api/conversations",
                               headers={"Authorization": f"Bearer {TOKEN}"}) as response:
            assert response.status == 200 and await response.json() == []
        async with session.get(base + "/console/") as response:
            assert response.status == 401
            assert 'name="token"' in await response.text()
        async with session.post(base + "/console/login", data={"token": "nope"}) as response:
            assert response.status == 401
        async with session.post(base + "/console/login", data={"token": TOKEN},
                                allow_redirects=False) as response:
            assert response.status == 303
            cookie = response.headers["Set-Cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
        async with session.get(base + "/console/") as response:  # the cookie is sent back
            assert response.status == 200
            assert "Conversations" in await response.text()


def test_no_token_no_console_beyond_this_machine(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    require_safe_bind("127.0.0.1", None)
    require_safe_bind("0.0.0.0", TOKEN)
    with pytest.raises(ConfigError, match="beyond this machine"):
        require_safe_bind("0.0.0.0", None)
    db = tmp_path / "t.db"
    db.touch()
    outcome = run_cli(capsys, "console", "--db", str(db), "--host", "0.0.0.0", "--port", "0")
    assert outcome.code == 2 and "without a token" in outcome.err
    config = tmp_path / "threadline.yaml"
    config.write_text("ops:\n  host: 0.0.0.0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"threadline.yaml:\d+: inspector.token: the console"):
        load_settings(config, env={})
    config.write_text("ops:\n  host: 0.0.0.0\ninspector:\n  token: ${CONSOLE_TOKEN}\n",
                      encoding="utf-8")
    assert load_settings(config, env={"CONSOLE_TOKEN": TOKEN}).inspector.token == TOKEN


async def test_without_a_token_only_this_machine_may_ask(tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        app = console_app(records=records_for(store), store=store, redactor=Redactor())
        runner = web.AppRunner(standalone_app(app))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            async with aiohttp.ClientSession() as session:
                async with session.get(base + "/console/") as response:
                    assert response.status == 200
                async with session.get(base + "/console/", headers={
                        "Host": "rebound.example:80"}) as response:  # a DNS name pointing here
                    assert response.status == 403
                    assert "another name" in await response.text()
                async with session.post(base + "/console/records/r1/replay", headers={
                        "Origin": "http://elsewhere.example"}) as response:
                    assert response.status == 403
                async with session.get(base + "/console/charts?days=soon") as response:
                    assert response.status == 400
        finally:
            await runner.cleanup()
