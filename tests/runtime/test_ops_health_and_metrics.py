"""The ops server: liveness, readiness naming each check, and per channel/agent metrics."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from threadline.channels.local import LocalChannel
from threadline.config import AgentChannel, AgentSettings, OpsSettings, Settings, StoreSettings
from threadline.ops import Metrics, OpsServer
from threadline.runtime import Runtime


def settings(tmp_path: Path) -> Settings:
    return Settings(
        store=StoreSettings(url=f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"),
        ops=OpsSettings(port=0), base_dir=tmp_path,
        agents={"support": AgentSettings(channels=[AgentChannel(name="local")]),
                "billing": AgentSettings(channels=[AgentChannel(name="local")])},
    )


async def get(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(
            f"http://127.0.0.1:{port}{path}") as response:
        return response.status, await response.text()


async def test_a_turn_shows_up_in_metrics_and_readiness(tmp_path: Path) -> None:
    runtime = Runtime.build(settings(tmp_path))
    await runtime.start()
    try:
        assert runtime.ops is not None
        port = runtime.ops.port
        [room] = runtime.channels
        assert isinstance(room, LocalChannel)
        await room.say("@billing where is my invoice", user="ada")

        assert await get(port, "/healthz") == (200, '{"status": "ok"}')
        status, body = await get(port, "/readyz")
        assert status == 200
        assert '"channel:local": "ok"' in body and '"store": "ok"' in body

        status, metrics = await get(port, "/metrics")
        assert status == 200
        assert 'threadline_turns_total{agent="billing",channel="local",stop_reason="end_turn"}' \
            ' 1.0' in metrics
        assert 'threadline_inbound_messages_total{channel="local"} 1.0' in metrics
        assert 'threadline_turn_latency_seconds_count{agent="billing",channel="local"} 1.0' \
            in metrics
        assert 'threadline_model_tokens_total{agent="billing",channel="local",kind="input"}' \
            in metrics
        assert "support" not in metrics  # nobody addressed the support agent
        assert [r.agent_name for r in room.sent] == ["billing"]
    finally:
        await runtime.stop()
    checks = await runtime.readiness()
    assert checks["channel:local"] == "not connected"


async def test_readiness_names_what_is_wrong() -> None:
    async def readiness() -> dict[str, str | None]:
        return {"store": "conversation store x could not read messages: down",
                "channel:slack": None}

    server = OpsServer(metrics=Metrics(), readiness=readiness, port=0)
    port = await server.start()
    try:
        status, body = await get(port, "/readyz")
        assert status == 503
        assert body == ('{"ready": false, "checks": {"channel:slack": "ok", "store": '
                        '"conversation store x could not read messages: down"}}')
        assert (await get(port, "/healthz"))[0] == 200
    finally:
        await server.stop()
