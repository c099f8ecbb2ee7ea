"""The support bot example: its config loads, its tools work, and it remembers across restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.channels.local import LocalChannel
from threadline.config import OpsSettings, Settings, StoreSettings, load_settings
from threadline.runtime import Runtime

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support_bot"


def example_settings(url: str) -> Settings:
    settings = load_settings(EXAMPLE / "threadline.yaml", env={})
    # The test types the lines itself instead of the terminal's stdin.
    terminal = settings.channels["terminal"].model_copy(update={"stdin": False})
    return settings.model_copy(update={"store": StoreSettings(url=url),
                                       "ops": OpsSettings(enabled=False),
                                       "channels": {"terminal": terminal}})


async def one_session(settings: Settings, *lines: str) -> list[str]:
    runtime = Runtime.build(settings)
    await runtime.start()
    try:
        [terminal] = runtime.channels
        assert isinstance(terminal, LocalChannel)
        for line in lines:
            await terminal.say(line, user="customer")
        return [r.text for r in terminal.sent]
    finally:
        await runtime.stop()


async def remembers_across_restart(url: str) -> None:
    settings = example_settings(url)
    assert settings.resolved_provider() == "offline"
    first = await one_session(settings, "hi, my order 4417 never arrived, I am ada@example.com")
    assert len(first) == 1
    second = await one_session(settings, "what did I say about my order?")
    assert "my order 4417 never arrived" in second[0]


async def test_remembers_a_returning_customer_on_sqlite(tmp_path: Path) -> None:
    await remembers_across_restart(f"sqlite+aiosqlite:///{tmp_path / 'support_bot.db'}")


@pytest.mark.postgres
async def test_same_example_on_postgresql_by_changing_the_url(pg_url: str) -> None:
    await remembers_across_restart(pg_url)


async def test_tools_load_by_reference_and_answer(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    settings = example_settings(f"sqlite+aiosqlite:///{tmp_path / 't.db'}")
    runtime = Runtime.build(settings)
    [support] = runtime.team.agents
    tools = {t.name: t for t in support.tools}
    assert set(tools) == {"search_knowledge_base", "customer_notes"}
    assert support.system_prompt.startswith("You are the support assistant of Northwind Goods")

    answer = await tools["search_knowledge_base"].run({"query": "how long do refunds take?"})
    assert answer.startswith("[Returns and refunds > Refund timing]")

    import support_tools  # imported by the runtime from beside the config

    monkeypatch.setattr(support_tools, "NOTES_FILE", tmp_path / "notes.json")
    notes = tools["customer_notes"]
    assert await notes.run({"email": "Ada@Example.com"}) == \
        "No notes about ada@example.com yet: a new customer."
    await notes.run({"email": "ada@example.com", "note": "order 4417, prefers email"})
    assert await notes.run({"email": "ada@example.com"}) == \
        "Notes about ada@example.com:\n- order 4417, prefers email"
    assert (await notes.run({"email": "not-an-email"})).startswith("Error: 'not-an-email'")
    await runtime.store.close()
