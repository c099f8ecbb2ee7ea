"""Tools from real MCP servers (the SDK's FastMCP) over stdio and Streamable HTTP, through the
fake Anthropic API: the call reaches the server, its result reaches the reply and the store."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.agents.mcp_servers import HttpServerProcess, calls, server_pids, stdio_settings
from tests.agents.test_agent_tool_loop import tools_then_text
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say, tool_call
from threadline.agents.agent import Agent, Memory, Tooling
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.approvals import ApprovalGate
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.agents.mcp import McpServer, McpServerSettings, McpToolset
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.approvals import SqlApprovalBook
from threadline.commands import CommandRegistry
from threadline.history.assembler import AssemblerOptions
from threadline.team import Team, default_commands

fake = fake_anthropic_fixture()


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[SqlConversationStore]:
    async with SqlConversationStore(sqlite_url) as opened:
        yield opened


@pytest.fixture
async def http_server(tmp_path: Path) -> AsyncIterator[HttpServerProcess]:
    process = HttpServerProcess(tmp_path / "http-calls.log")
    await process.start()
    yield process
    if process.process is not None and process.process.poll() is None:
        process.kill()


@pytest.fixture(params=["stdio", "streamable_http"])
async def calc(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[
        tuple[McpServer, Path, HttpServerProcess | None]]:
    """A connected `calc` server of each kind, and the file its tool runs are logged in."""
    http: HttpServerProcess | None = None
    if request.param == "stdio":
        log = tmp_path / "stdio-calls.log"
        settings = stdio_settings(log)
    else:
        log = tmp_path / "http-calls.log"
        http = HttpServerProcess(log)
        await http.start()
        settings = http.settings()
    server = McpServer("calc", settings)
    server.start()
    assert await server.wait_up(30), server.problem
    yield server, log, http
    await server.stop()
    if http is not None and http.process is not None and http.process.poll() is None:
        http.kill()


def agent_with(server: McpServer, fake: FakeAnthropic, store: SqlConversationStore,
               **lists: tuple[str, ...]) -> Agent:
    return Agent(name="support", model="claude-test", conversation_history=store,
                 provider=AnthropicProvider(fake.client(), stream=False),
                 tooling=Tooling(toolsets=[McpToolset([server], **lists)]))


async def test_the_model_calls_an_mcp_tool_and_its_result_reaches_the_reply(
        calc: tuple[McpServer, Path, HttpServerProcess | None], fake: FakeAnthropic,
        store: SqlConversationStore) -> None:
    server, log, _ = calc
    fake.script(tool_use("calc__add", {"a": 2, "b": 3}, id="toolu_add"),
                text("2 and 3 make 5."))
    agent = agent_with(server, fake, store)

    result = await agent.invoke(say("What is 2 + 3?", conversation_id="c1"))

    assert result.output == "2 and 3 make 5."
    assert calls(log) == ["add"]
    first, second = fake.bodies
    offered = {t["name"] for t in first["tools"]}
    assert {"calc__add", "calc__shout", "calc__big_report"} <= offered
    sent_result = second["messages"][-1]["content"][0]
    assert sent_result["type"] == "tool_result" and sent_result["tool_use_id"] == "toolu_add"
    assert "5" in str(sent_result["content"])
    stored = await store.get("c1")
    assert stored[-1].content == "2 and 3 make 5."
    (exchange,) = stored[-1].tool_exchanges
    assert exchange.call.name == "calc__add" and exchange.result.content == "5"
    assert not exchange.result.is_error


async def test_a_denied_tool_is_never_offered_to_the_model(
        calc: tuple[McpServer, Path, HttpServerProcess | None], fake: FakeAnthropic,
        store: SqlConversationStore) -> None:
    server, _log, _ = calc
    fake.script(text("Hello."))
    agent = agent_with(server, fake, store, deny=("calc/delete_everything",))

    await agent.invoke(say("Hi", conversation_id="c1"))

    offered = {t["name"] for t in fake.bodies[0]["tools"]}
    assert "calc__delete_everything" not in offered
    assert "calc__add" in offered
    only = McpToolset([server], allow=("calc/add",))
    assert [t.name for t in only.tools()] == ["calc__add"]
    assert McpToolset([server], allow=("other",)).tools() == []


async def test_a_model_asking_for_a_denied_tool_runs_nothing(
        calc: tuple[McpServer, Path, HttpServerProcess | None], fake: FakeAnthropic,
        store: SqlConversationStore) -> None:
    server, log, _ = calc
    fake.script(tool_use("calc__delete_everything", {}, id="toolu_del"), text("I cannot."))
    agent = agent_with(server, fake, store, deny=("calc/delete_everything",))

    result = await agent.invoke(say("Delete it all", conversation_id="c1"))

    assert result.tool_exchanges[0].result.is_error
    assert "no tool named 'calc__delete_everything'" in result.tool_exchanges[0].result.content
    assert calls(log) == []


async def test_a_killed_server_comes_back_and_the_next_call_works(
        calc: tuple[McpServer, Path, HttpServerProcess | None], fake: FakeAnthropic,
        store: SqlConversationStore) -> None:
    server, log, http = calc
    fake.script(tool_use("calc__add", {"a": 1, "b": 1}, id="t1"), text("2."),
                tool_use("calc__add", {"a": 2, "b": 2}, id="t2"), text("Something broke."),
                tool_use("calc__add", {"a": 3, "b": 3}, id="t3"), text("6."))
    agent = agent_with(server, fake, store)
    await agent.invoke(say("1+1?", conversation_id="c1"))
    (first_pid,) = server_pids(log)

    if http is None:
        os.kill(first_pid, signal.SIGKILL)
    else:
        http.kill()
        await http.start()
    broken = await agent.invoke(say("2+2?", conversation_id="c1"))
    after = await agent.invoke(say("3+3?", conversation_id="c1"))

    # The call made as the server died is an error the model saw, and it was not repeated.
    assert broken.tool_exchanges[0].result.is_error
    assert after.output == "6." and after.tool_exchanges[0].result.content == "6"
    assert calls(log) == ["add", "add"]
    assert len(server_pids(log)) == 2  # a new process answered the last call


async def test_the_tool_list_follows_the_server(
        calc: tuple[McpServer, Path, HttpServerProcess | None]) -> None:
    server, _, _ = calc
    assert "late_tool" not in server.tools

    assert await server.call("add_tool", {}) == "added"

    for _ in range(200):
        if "late_tool" in server.tools:
            break
        await asyncio.sleep(0.05)
    assert "late_tool" in server.tools
    assert await server.call("late_tool", {}) == "late and present"


async def test_a_server_down_at_start_is_retried_until_it_listens(tmp_path: Path) -> None:
    http = HttpServerProcess(tmp_path / "late.log")
    server = McpServer("late", McpServerSettings(url=http.url, connect_timeout=5))
    server.start()
    try:
        assert not await server.wait_up(0.5)
        assert server.problem and server.problem != "not connected yet"
        await http.start()
        assert await server.wait_up(60), server.problem
        assert await server.call("shout", {"text": "up"}) == "UP"
    finally:
        await server.stop()
        if http.process is not None:
            http.kill()



async def test_large_results_are_hidden_later_and_can_be_read_again(
        calc: tuple[McpServer, Path, HttpServerProcess | None],
        store: SqlConversationStore) -> None:
    server, _, _ = calc

    def report_when_asked(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "user" and "report" in last.content:
            return ModelResponse(text="", stop_reason="tool_use", tool_calls=(
                tool_call("calc__big_report", lines=200),))
        return ModelResponse(text="Here it is.")

    model = ScriptedModel(report_when_asked)
    agent = Agent(name="support", model="claude-test", conversation_history=store,
                  provider=model,
                  tooling=Tooling(toolsets=[McpToolset([server])]),
                  memory=Memory(options=AssemblerOptions(addressed_only_mode=False,
                                                         token_budget=50_000)))
    for n in range(3):
        await agent.invoke(say(f"report {n}", conversation_id="c1"))
    await agent.invoke(say("and now?", conversation_id="c1"))

    last = model.requests[-1]
    shown = [e.result.content for m in last.messages for e in m.tool_exchanges]
    assert shown[0].startswith("[tool result of calc__big_report (")  # hidden, referenced
    assert shown[-1].startswith("line 0: all systems nominal")  # the newest shown whole
    assert "retrieve_tool_result" in {t.name for t in last.tools}
    first_id = next(e.call.id for m in last.messages for e in m.tool_exchanges)
    stored = await store.get("c1")
    whole = next(e.result.content for m in stored for e in m.tool_exchanges
                 if e.call.id == first_id)
    assert whole.count("\n") == 199  # storage keeps the whole result


async def test_a_server_that_requires_approval_waits_for_the_asker(
        calc: tuple[McpServer, Path, HttpServerProcess | None],
        store: SqlConversationStore) -> None:
    server, log, _ = calc
    guarded = McpServer("calc", server.settings.model_copy(update={"require_approval": True}))
    guarded.start()
    assert await guarded.wait_up(30), guarded.problem
    try:
        model = tools_then_text([("calc__add", {"a": 20, "b": 22})], final="It is 42.")
        channel = RecordingChannel(name="room")
        gate = ApprovalGate(SqlApprovalBook(store), store=store, channels={"room": channel},
                            poll=0.05)
        agent = Agent(name="support", conversation_history=store, provider=model,
                      tooling=Tooling(toolsets=[McpToolset([guarded])], approvals=gate))
        team = Team([agent], approvals=gate,
                    commands=CommandRegistry((*default_commands(), *gate.commands())))
        team.attach(channel, respond_to_all=True)
        await team.start()
        try:
            asked = asyncio.ensure_future(team.until_answered(
                say("what is 20 + 22?", conversation_id="local:room"), channel))
            for _ in range(400):
                if channel.sent:
                    break
                await asyncio.sleep(0.05)
            request = channel.sent[0][1]
            assert "support wants to run calc__add" in request and calls(log) == []
            command = request.split("type ")[1].split(" or ")[0]
            await team.until_answered(say(command, conversation_id="local:room"), channel)
            await asked
        finally:
            await team.stop()
    finally:
        await guarded.stop()

    assert calls(log) == ["add"]
    assert [text for _, text, _ in channel.sent[1:]] == ["It is 42.", "Approved: calc__add ran."]


async def test_a_call_that_takes_too_long_is_an_error_and_the_server_stays_usable(
        calc: tuple[McpServer, Path, HttpServerProcess | None]) -> None:
    server, _, _ = calc
    hasty = McpServer("calc", server.settings.model_copy(update={"timeout": 0.5}))
    hasty.start()
    try:
        assert await hasty.wait_up(30), hasty.problem
        with pytest.raises(TimeoutError, match=r"did not answer 'slow' within 0.5 s"):
            await hasty.call("slow", {"seconds": 5})
        assert await hasty.call("add", {"a": 1, "b": 2}) == "3"
    finally:
        await hasty.stop()
