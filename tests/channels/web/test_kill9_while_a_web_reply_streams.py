"""`threadline run` killed with SIGKILL while a web visitor watches a reply being written, then
started again: the visitor's browser, reconnecting as `EventSource` does (the id of the last
event it read), gets the reply complete, once; the conversation holds the question and one
answer; the session cookie it had still names the same visitor."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp

from tests.channels.web.rig import SHOP, Visitor, next_event, write_web_config
from tests.fakes.anthropic import FakeAnthropic, text
from tests.ports import free_port
from tests.runtime.platforms import Platform
from tests.runtime.test_run_kill9_answers_everything import start
from threadline.backends.sql.store import SqlConversationStore

ANSWER = "Your parcel 4417-B left the depot this morning and arrives tomorrow before noon."
NO_PLATFORM = Platform(channel_yaml="", env={}, fake=None)  # the secrets are in .env


async def test_kill_9_mid_reply_then_restart_gives_the_visitor_the_reply_once(
        tmp_path: Path) -> None:
    async with FakeAnthropic() as model:
        model.responder = lambda body: text(ANSWER, tokens_per_second=4)
        port = free_port()
        config = write_web_config(tmp_path, model.url, port=port, origins=[SHOP])
        base = f"http://127.0.0.1:{port}"
        first = await start(config, NO_PLATFORM, tmp_path / "first.log")
        visitor = Visitor(base)
        try:
            await visitor.open()
            async with visitor.events() as events:
                await next_event(events, "ready")
                status, _ = await visitor.send("where is my parcel?")
                assert status == 202
                question = await next_event(events, "turn")
                draft = await next_event(events, "draft")
                assert draft.data["text"] != ANSWER  # killed while it is being written
                first.send_signal(signal.SIGKILL)
                await first.wait()
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()

        second = await start(config, NO_PLATFORM, tmp_path / "second.log")
        try:
            heard = []
            async with visitor.events(last_event_id=question.event_id) as events:
                while not heard or heard[-1].kind != "turn":
                    heard.append(await next_event(events, "", within=60))
            assert [(e.data["id"], e.data["text"]) for e in heard if e.kind == "turn"] == [
                (draft.data["id"], ANSWER)]
            async with visitor.events() as events:  # the page opened again
                shown = []
                while not shown or shown[-1].kind != "ready":
                    shown.append(await next_event(events, ""))
            assert [(e.data["from"], e.data["text"]) for e in shown if e.kind == "turn"] == [
                ("visitor", "where is my parcel?"), ("agent", ANSWER)]
            second.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                await second.wait()
        except (AssertionError, TimeoutError, aiohttp.ClientError):
            print((tmp_path / "second.log").read_text()[-4000:])
            raise
        finally:
            await visitor.close()
            if second.returncode is None:
                second.kill()
                await second.wait()

    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as store:
        [conversation] = await store.list_conversations()
        turns = await store.get(conversation.conversation_id)
        assert [t.content for t in turns] == ["where is my parcel?", ANSWER]
