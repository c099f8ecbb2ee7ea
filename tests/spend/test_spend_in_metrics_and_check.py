"""What `threadline run` spends shows in /metrics (tokens by kind, spend, cost) and in check."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.fakes.anthropic import FakeAnthropic, text
from threadline.channels.local import LocalChannel
from threadline.cli.check import check_store
from threadline.config import (
    AgentChannel,
    AgentSettings,
    ModelSettings,
    OpsSettings,
    PriceSettings,
    Settings,
    SpendSettings,
    StoreSettings,
)
from threadline.runtime import Runtime


async def metrics_text(port: int) -> str:
    async with aiohttp.ClientSession() as session, session.get(
            f"http://127.0.0.1:{port}/metrics") as response:
        return await response.text()


async def test_spend_and_cache_tokens_reach_metrics_and_check(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        fake.script(text("Your plan renews in June.", usage={
            "input_tokens": 40, "output_tokens": 10, "cache_read_input_tokens": 900,
            "cache_creation_input_tokens": 50}))
        settings = Settings(
            store=StoreSettings(url=f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"),
            model=ModelSettings(provider="anthropic", api_key="test", base_url=fake.url),
            spend=SpendSettings(per_conversation_daily_tokens=1000, prices={
                "anthropic/claude-sonnet-5-5": PriceSettings(input=3, output=15, cache_read=0.3,
                                                             cache_write=3.75)}),
            ops=OpsSettings(port=0), base_dir=tmp_path,
            agents={"support": AgentSettings(channels=[AgentChannel(name="local")])})
        runtime = Runtime.build(settings)
        await runtime.start()
        try:
            assert runtime.ops is not None
            [room] = runtime.channels
            assert isinstance(room, LocalChannel)
            await room.say("@support when does my plan renew?", user="ada")
            await room.say("@support and the price?", user="ada")
            metrics = await metrics_text(runtime.ops.port)
        finally:
            await runtime.stop()
        assert len(fake.requests) == 1  # the second question found the budget used up

    labels = 'agent="support",channel="local"'
    for kind, count in (("input", 40), ("output", 10), ("cache_read", 900),
                        ("cache_write", 50)):
        assert f'threadline_model_tokens_total{{{labels},kind="{kind}"}} {count}.0' in metrics
    assert f'threadline_turns_total{{{labels},stop_reason="budget_exhausted"}} 1.0' in metrics
    assert 'threadline_spend_tokens_today{agent="support"} 1000.0' in metrics
    cost = (40 * 3 + 10 * 15 + 900 * 0.3 + 50 * 3.75) / 1e6
    assert f'threadline_spend_cost_usd_today{{agent="support"}} {cost}' in metrics
    assert 'threadline_spend_budget_tokens{scope="conversation"} 1000.0' in metrics
    assert room.sent[1].text.startswith("This conversation's daily budget for answers is used "
                                        "up (1,000 of 1,000 tokens). It resets at 00:00 UTC")

    # A restarted process shows today's spend before its first turn.
    restarted = Runtime.build(settings)
    await restarted.start()
    try:
        assert restarted.ops is not None
        again = await metrics_text(restarted.ops.port)
    finally:
        await restarted.stop()
    assert 'threadline_spend_tokens_today{agent="support"} 1000.0' in again

    line = await check_store(settings)
    assert line.endswith("UTC): 1,000 tokens, ~$0.0007 estimated; support 1,000 (~$0.0007)")
