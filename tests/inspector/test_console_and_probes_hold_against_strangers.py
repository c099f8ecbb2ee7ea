"""A page elsewhere cannot read the probes through a visitor's browser, a token cannot be
guessed at network speed, and a short token is not accepted beyond this machine."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from threadline.backends.parts import records_for
from threadline.backends.sql import SqlConversationStore
from threadline.config import ConfigError, load_settings
from threadline.inspector.console import console_app, standalone_app
from threadline.inspector.console.auth import LOGIN_ATTEMPTS, require_safe_bind
from threadline.inspector.redaction import Redactor
from threadline.ops import Metrics, OpsServer

TOKEN = "a-console-token-long-enough-to-hold"


async def _ready() -> dict[str, str | None]:
    return {"store": None}


async def test_the_probes_answer_only_to_a_loopback_host() -> None:
    server = OpsServer(metrics=Metrics(), readiness=_ready, port=0)
    port = await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            for path in ("/healthz", "/readyz", "/metrics"):
                # DNS rebinding: the browser sends the attacker's name as the Host.
                async with session.get(f"http://127.0.0.1:{port}{path}",
                                       headers={"Host": f"evil.example:{port}"}) as response:
                    assert response.status == 403, path
                    assert "127.0.0.1" in await response.text()
                for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
                    async with session.get(f"http://127.0.0.1:{port}{path}",
                                           headers={"Host": host}) as response:
                        assert response.status == 200, (path, host)
    finally:
        await server.stop()


@pytest.fixture
async def console_url(tmp_path: Path) -> AsyncIterator[str]:
    async with SqlConversationStore(f"sqlite:///{tmp_path / 't.db'}") as store:
        app = console_app(records=records_for(store), store=store, redactor=Redactor(),
                          token=TOKEN)
        runner = web.AppRunner(standalone_app(app))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            yield f"http://127.0.0.1:{runner.addresses[0][1]}/console"
        finally:
            await runner.cleanup()


async def test_failed_logins_are_throttled_even_for_the_right_token(console_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(LOGIN_ATTEMPTS):
            async with session.post(f"{console_url}/login", data={"token": "guess"},
                                    allow_redirects=False) as response:
                assert response.status == 401
        async with session.post(f"{console_url}/login", data={"token": TOKEN},
                                allow_redirects=False) as response:
            assert response.status == 429
            assert int(response.headers["Retry-After"]) > 0
            assert "too many failed logins" in await response.text()
        async with session.get(f"{console_url}/api/conversations",
                               headers={"Authorization": f"Bearer {TOKEN}"}) as response:
            assert response.status == 200  # the token itself still works by header


def test_a_short_token_is_refused_beyond_loopback(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least 24"):
        require_safe_bind("0.0.0.0", "x")
    require_safe_bind("127.0.0.1", "x")  # on this machine alone, any token will do
    require_safe_bind("0.0.0.0", TOKEN)
    config = tmp_path / "threadline.yaml"
    config.write_text("ops:\n  host: 0.0.0.0\ninspector:\n  token: ${T}\n", encoding="utf-8")
    (tmp_path / ".env").write_text("T=short-token\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"inspector.token: the console token is 11"):
        load_settings(config)
