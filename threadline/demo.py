"""`threadline demo`: two agents sharing one remembered conversation, offline, in a terminal.

A `support` agent (persistent memory: recall, rolling summaries, the conversation_search tool)
and a `billing` agent share the local room `local:demo` on the embedded SQLite store. After
each line the demo shows the machinery: who was addressed, what each agent saw (tokens of its
budget, summary, recalled turns) and what its searches found. Run it twice: the second run
greets with the turns it remembers and the support agent can answer from the first run. Every
reply is recorded; the web console on 127.0.0.1 shows what each agent saw while the demo runs
(`threadline console --db PATH` shows it afterwards).

    threadline demo                         # type lines; @support / @billing address an agent
    threadline demo --script lines.txt      # one message per line, print everything, exit
    threadline demo --web                   # the same agents in the website chat widget, on
                                            # http://127.0.0.1:8790/ until Ctrl-C
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from aiohttp import web

from threadline.agents.agent import Agent, Memory
from threadline.agents.llm import ModelProvider
from threadline.backends import Backend, open_backend
from threadline.channels.local import (
    TERMINAL_PROMPT,
    LocalChannel,
    LocalReply,
    nobody_addressed,
    typed_lines,
)
from threadline.errors import ConfigError
from threadline.history.assembler import AssemblerOptions
from threadline.history.embedding_model import shared_embedder
from threadline.history.indexer import indexer_for
from threadline.history.summary import Summarizer
from threadline.inspector.console import PREFIX as CONSOLE_PREFIX
from threadline.inspector.console import standalone_app
from threadline.inspector.redaction import redactor_for
from threadline.inspector.setup import Inspector
from threadline.interceptors.base import CallNext
from threadline.listening import Listener, port_problem
from threadline.log import configure_logging
from threadline.team import Team
from threadline.tracing import TracingOptions, start_tracing
from threadline.turn import AgentResult, TurnContext

if TYPE_CHECKING:
    from threadline.channels.web import WebChannel

ROOM = "demo"
CONSOLE_PORT = 9109  # another free port is taken when this one is busy
WEB_PORT = 8790  # the web channel's default port; another free one when it is busy
SUPPORT_PROMPT = ("You are the support agent of a small online shop. Remember what customers "
                  "tell you and use conversation_search when they ask about earlier turns.")
BILLING_PROMPT = "You are the billing agent: invoices, refunds and payment methods."


@dataclass
class TurnLog:
    """What the agents did for the current line, filled in by `ShowMachinery`."""

    results: list[AgentResult] = field(default_factory=list)


class ShowMachinery:
    """An interceptor that keeps each agent's result so the demo can show what it saw."""

    def __init__(self, turns: TurnLog) -> None:
        self.turns = turns

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        result = await call_next()
        self.turns.results.append(result)
        return result


def describe(result: AgentResult, budget: int) -> list[str]:
    """The lines that say what one agent saw and did for one turn."""
    lines: list[str] = []
    figures = result.prompt
    if figures is not None:
        summary = ("created" if figures.summary_created
                   else "used" if figures.summary_used else "none")
        lines.append(
            f"    saw {figures.included} turns, {figures.token_count}/{budget} tokens; summary "
            f"{summary}"
            f"; recalled {figures.recalled}; filtered out {figures.filtered} not addressed to it"
            f"; dropped {figures.dropped_for_budget} for budget")
        lines.extend(f"    note: {note}" for note in figures.notes)
    for exchange in result.tool_exchanges:
        query = exchange.call.input.get("query", "")
        found = exchange.result.content.strip().splitlines()
        lines.append(f"    {exchange.call.name}({query!r}) -> {len(found)} line(s)")
        lines.extend(f"      | {line[:110]}" for line in found[:4])
    return lines


def build_provider() -> tuple[ModelProvider, Summarizer | None]:
    from threadline.agents.offline import OfflineModel
    from threadline.agents.summarizer import ExtractiveSummarizer

    return OfflineModel(), ExtractiveSummarizer()


class Demo:
    """The demo's team, room and printing; `line()` handles one user message."""

    def __init__(self, backend: Backend, out: TextIO, *, command: str = "threadline") -> None:
        store = backend.history
        self.db = backend.shown_url.removeprefix("sqlite:///")
        self.out = out
        self.command = command  # how the person calls `threadline`, for the console hint
        self.store = store
        self.turns = TurnLog()
        self.inspector = Inspector(store=store, redactor=redactor_for(), records=backend.records)
        provider, summarizer = build_provider()
        interceptors = [ShowMachinery(self.turns)]
        self.support = Agent(
            name="support", system_prompt=SUPPORT_PROMPT, conversation_history=store,
            provider=provider, interceptors=interceptors,
            description="answers questions and remembers the customer",
            memory=Memory(options=AssemblerOptions(token_budget=1500,
                                                   rolling_summary_threshold=16),
                          summarizer=summarizer),
            observer=self.inspector.recorder,
        )
        self.billing = Agent(
            name="billing", system_prompt=BILLING_PROMPT, conversation_history=store,
            provider=provider, interceptors=interceptors, description="invoices and refunds",
            memory=Memory(options=AssemblerOptions(token_budget=800, recall=False)),
            observer=self.inspector.recorder,
        )
        self.team = Team([self.support, self.billing])
        self.replies: list[LocalReply] = []
        self.room = LocalChannel(name="local", room=ROOM, on_reply=self._keep_reply)
        self.team.attach(self.room)
        self.budgets = {a.name: a.assembler_options.token_budget
                        for a in (self.support, self.billing)}
        self.console_url = ""

    def _keep_reply(self, reply: LocalReply) -> None:
        self.replies.append(reply)

    async def serve_console(self) -> web.AppRunner:
        """The console on 127.0.0.1 while the demo runs; says where it is."""
        app = self.inspector.console([self.support, self.billing])
        if app is None:
            raise ConfigError("the demo's backend keeps no reply records: no console to serve")
        runner = web.AppRunner(standalone_app(app), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", CONSOLE_PORT).start()
        except OSError:
            await web.TCPSite(runner, "127.0.0.1", 0).start()
        self.console_url = f"http://127.0.0.1:{runner.addresses[0][1]}{CONSOLE_PREFIX}/"
        return runner

    async def greet(self) -> None:
        earlier = await self.store.count(self.room.conversation_id)
        db = self.db
        memory = (f"{earlier} earlier turns remembered" if earlier
                  else "no earlier turns yet (run it again later: it will remember)")
        self.out.write(
            f"Threadline demo (offline model) - conversation {self.room.conversation_id} in "
            f"{db}: {memory}.\nAgents: @support (memory, recall, search) and @billing. "
            "Address one with @name; Ctrl-D to leave.\n"
            f"What each agent saw, reply by reply, and replay: {self.console_url} (while the "
            f"demo runs; afterwards, without replay: {self.command} console --db {db})\n")

    async def line(self, text: str) -> None:
        self.turns.results.clear()
        self.replies.clear()
        await self.room.say(text)
        if not self.turns.results:
            self.out.write(nobody_addressed(("support", "billing")) + "\n")
            return
        names = ", ".join(r.agent_name for r in self.turns.results)
        self.out.write(f"    addressed: {names}\n")
        # Replies as the room received them, each followed by what its agent saw.
        for result in self.turns.results:
            sent = next((r for r in self.replies if r.agent_name == result.agent_name), None)
            if sent is not None:
                self.replies.remove(sent)
                self.out.write(f"{sent.agent_name}> {sent.text}\n")
            for line in describe(result, self.budgets[result.agent_name]):
                self.out.write(line + "\n")
        self.out.flush()


def _script_lines(path: Path) -> list[str]:
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--script {path}: cannot read it ({exc.strerror})") from exc
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


async def _interactive(demo: Demo) -> None:
    async for line in typed_lines(sys.stdin, prompt=TERMINAL_PROMPT, echo=demo.out):
        text = line.strip()
        if text in ("quit", "exit"):
            return
        if text:
            await demo.line(text)
    demo.out.write("\n")


async def run_demo(db: Path, script: list[str] | None, out: TextIO, *,
                   command: str = "threadline") -> None:
    if not db.parent.exists():
        raise ConfigError(f"--db {db}: the folder {str(db.parent)!r} does not exist")
    async with open_backend(f"sqlite:///{db}") as backend:
        demo = Demo(backend, out, command=command)
        # The demo has no config: the OTEL_* variables alone turn its traces on.
        tracing = start_tracing(TracingOptions(), redactor=demo.inspector.redactor)
        indexer = indexer_for(backend.history, backend.vectors,
                              await shared_embedder() if backend.vectors is not None else None)
        await demo.team.start()
        if indexer is not None:
            indexer.start()
        console = await demo.serve_console()
        try:
            await demo.greet()
            if script is None:
                await _interactive(demo)
            else:
                for text in script:
                    out.write(f"{TERMINAL_PROMPT}{text}\n")
                    await demo.line(text)
        finally:
            await demo.team.stop()
            if indexer is not None:
                await indexer.stop()
            for agent in demo.team.agents:
                await agent.close()
            await demo.inspector.stop()
            await console.cleanup()
            if tracing is not None:
                await asyncio.to_thread(tracing.stop)


def _web_session_secret(db: Path) -> str:
    """The demo widget's session secret, kept beside the database so a visitor's conversation
    survives the demo's restarts as it does the page's reloads."""
    path = db.with_name(db.name + ".web-secret")
    if not path.exists():
        path.write_text(secrets.token_urlsafe(32), encoding="utf-8")
        path.chmod(0o600)
    return path.read_text(encoding="utf-8").strip()


async def _serve_web(demo: Demo, backend: Backend, db: Path) -> WebChannel:
    """The demo's agents in the website chat widget on 127.0.0.1 (the web channel)."""
    from threadline.channels.files import FileIntake
    from threadline.channels.web import WebChannel
    from threadline.channels.web.settings import WebSettings

    free = port_problem(Listener("127.0.0.1", WEB_PORT, "--web", "--web")) is None
    settings = WebSettings(type="web", port=WEB_PORT if free else 0,
                           title="Threadline demo: @support, @billing",
                           session_secret=_web_session_secret(db))
    channel = WebChannel(name="web", settings=settings, history=backend.history)
    if backend.files is not None:
        channel.file_intake = FileIntake(store=backend.files)
    demo.team.attach(channel)
    await channel.start(demo.team)
    return channel


async def run_web_demo(db: Path, out: TextIO, *, command: str = "threadline") -> None:
    """`threadline demo --web`: the demo's team in the chat widget until Ctrl-C or SIGTERM."""
    if not db.parent.exists():
        raise ConfigError(f"--db {db}: the folder {str(db.parent)!r} does not exist")
    async with open_backend(f"sqlite:///{db}") as backend:
        demo = Demo(backend, out, command=command)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await demo.team.start()
        console = await demo.serve_console()
        web_chat = await _serve_web(demo, backend, db)
        try:
            out.write(f"Threadline demo (offline model): open {web_chat.base_url}/ in a browser "
                      "and write to @support or @billing there (Ctrl-C to stop).\n"
                      f"What each agent saw, reply by reply: {demo.console_url}\n")
            out.flush()
            await stop.wait()
        finally:
            await web_chat.stop()
            await demo.team.stop()
            for agent in demo.team.agents:
                await agent.close()
            await demo.inspector.stop()
            await console.cleanup()


def main(args: argparse.Namespace) -> int:
    """`threadline demo [--script FILE | --web] [--db PATH]`."""
    configure_logging("warning", "console")
    if args.web:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run_web_demo(args.db, sys.stdout, command=args.invoked_as))
        return 0
    script = _script_lines(args.script) if args.script else None
    asyncio.run(run_demo(args.db, script, sys.stdout, command=args.invoked_as))
    return 0
