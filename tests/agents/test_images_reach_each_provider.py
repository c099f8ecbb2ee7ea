"""A picture a person sent reaches each provider in its own shape, and a refusal loses nothing.

OpenAI-compatible servers get it as an `image_url` data URL part beside the text; Anthropic as
a base64 `image` block. When the model refuses the request with the picture, the turn is
answered from its text (which names the picture), with no image in the second request. A model
that cannot see (`sees_images=False`) never gets the picture, only its line.
"""

from __future__ import annotations

import base64
from pathlib import Path

from tests.fakes import anthropic as fake_anthropic
from tests.fakes import openai as fake_openai
from tests.fakes.files import png
from threadline.agents import Agent
from threadline.agents.agent import Answering
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.openai_provider import OpenAIProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.history.files import TurnFile, files_extra, sha256_of
from threadline.history.model import Participant, StoredMessage

PICTURE = png(100, 80)


async def _asking(store: SqlConversationStore) -> StoredMessage:
    files = SqlFileStore(store)
    await files.put(PICTURE, sha256=sha256_of(PICTURE), media_type="image/png")
    shot = TurnFile(name="shot.png", media_type="image/png", size=len(PICTURE),
                    sha256=sha256_of(PICTURE), width=100, height=80)
    return StoredMessage(conversation_id="local:pics", participant=Participant("user", "ann"),
                         content=f"what is this?\n{shot.prompt_line()}",
                         metadata={"extra": files_extra([shot])})


async def test_openai_gets_an_image_url_data_part(tmp_path: Path) -> None:
    async with fake_openai.FakeOpenAI() as fake, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'o.db'}") as store:
        fake.script(fake_openai.text("A small grey square."), fake_openai.text("Grey."))
        agent = Agent(name="support", model="fake-model", conversation_history=store,
                      provider=OpenAIProvider(fake.client()))
        agent.files = SqlFileStore(store)
        result = await agent.invoke(await _asking(store))
        assert result.output == "A small grey square."
        last = fake.bodies[0]["messages"][-1]
        assert last["role"] == "user"
        assert last["content"][0] == {"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + base64.b64encode(PICTURE).decode()}}
        assert "what is this?" in last["content"][1]["text"]


async def test_a_refused_picture_is_answered_from_the_text(tmp_path: Path) -> None:
    async with fake_anthropic.FakeAnthropic() as fake, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'a.db'}") as store:
        fake.script(fake_anthropic.error(400, "invalid_request_error", "Could not process image"),
                    fake_anthropic.text("I could not open the picture; what does it show?"),
                    fake_anthropic.error(400, "invalid_request_error", "Could not process image"))
        agent = Agent(name="support", conversation_history=store,
                      provider=AnthropicProvider(fake.client(), stream=False))
        agent.files = SqlFileStore(store)
        result = await agent.invoke(await _asking(store))
        assert result.output.startswith("I could not open the picture")
        refused, answered = fake.bodies[:2]
        assert '"type": "image"' in str(refused).replace("'", '"')
        assert "image" not in {b["type"] for m in answered["messages"] for b in m["content"]}
        assert "[image shot.png, 100x80]" in str(answered)


async def test_a_model_that_cannot_see_gets_the_line(tmp_path: Path) -> None:
    async with fake_anthropic.FakeAnthropic() as fake, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'b.db'}") as store:
        fake.script(fake_anthropic.text("You sent a picture called shot.png."))
        agent = Agent(name="support", conversation_history=store,
                      provider=AnthropicProvider(fake.client(), stream=False),
                      answering=Answering(sees_images=False))
        agent.files = SqlFileStore(store)
        await agent.invoke(await _asking(store))
        [body] = fake.bodies
        assert "image" not in {b["type"] for m in body["messages"] for b in m["content"]}
        assert "[image shot.png, 100x80]" in str(body)


async def test_a_picture_takes_its_share_of_the_token_budget(tmp_path: Path) -> None:
    big = png(1280, 800)  # 1,365 tokens as Anthropic counts it
    async with fake_anthropic.FakeAnthropic() as fake, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'c.db'}") as store:
        fake.script(fake_anthropic.text("A wide screenshot."), fake_anthropic.text("Wide."))
        await store.append_many([StoredMessage(
            conversation_id="local:pics", participant=Participant("user", "ann"),
            content=f"@support earlier note {n}: " + "words " * 80) for n in range(60)])
        files = SqlFileStore(store)
        await files.put(big, sha256=sha256_of(big), media_type="image/png")
        shot = TurnFile(name="wide.png", media_type="image/png", size=len(big),
                        sha256=sha256_of(big), width=1280, height=800)
        agent = Agent(name="support", conversation_history=store,
                      provider=AnthropicProvider(fake.client(), stream=False))
        agent.files = files
        result = await agent.invoke(StoredMessage(
            conversation_id="local:pics", participant=Participant("user", "ann"),
            content=shot.prompt_line(), metadata={"extra": files_extra([shot])}))
        assert result.prompt is not None
        budget = agent.assembler_options.token_budget
        assert result.prompt.dropped_for_budget > 0
        assert 1365 < result.prompt.token_count <= budget  # the picture counted, within budget
