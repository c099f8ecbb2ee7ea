"""One eval case run against one config: a fresh store, the config's agents, the turns.

Each case runs alone, in a SQLite file of its own in a temporary folder (the default store,
so recall ranks as it does in a deployment on it), copied from one database migrated once per
run (`FreshStores`: creating the schema is most of a store's start, about 3 s here against
0.06 s to open a copy), with the agents `build_agents` makes from
the config (system prompts, models, tools, memory settings, the offline model included) and
a reply recorder, so the case keeps the prompt each agent saw. A written case's turns go
through the team one by one as a local room's would (routing, hand-offs, files); a captured
case's stored turns are put back as they were and the answered turn is given to the agents
that answered it then. Features (MCP servers, approvals, budgets) are not started in a case.

Where the agents recall by meaning, every stored turn is embedded before a turn is answered
(in a deployment a background indexer does it, a moment later), so recall does not depend on
timing. With `isolated:` expected, another person's turn in another conversation is stored first,
holding a marker nobody else says: the marker must show neither in a reply nor in a prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import shutil
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from threadline.agents.agent import Agent
from threadline.backends import Backend, BackendOptions, build_backend
from threadline.channels.files import FileIntake, IncomingFile, take_in
from threadline.channels.local import LocalChannel
from threadline.config import Settings
from threadline.errors import ConfigError
from threadline.evals.cases import Case, Said
from threadline.features import BuiltFeatures
from threadline.history.codec import message_from_dict
from threadline.history.embedding_model import shared_embedder
from threadline.history.indexer import VectorIndexer, indexer_for
from threadline.history.model import MessageMetadata, Participant, StoredMessage
from threadline.inspector.recorder import ReplyRecorder
from threadline.ops import Metrics
from threadline.provider_setup import Providers
from threadline.runtime import build_agents, files_for
from threadline.spend.setup import price_for
from threadline.team import Team
from threadline.turn import AgentResult

log = structlog.get_logger("threadline.evals")

DECOY_CONVERSATION = "local:eval-decoy"
STOP_SECONDS = 0.5
# Alembic keeps its migration context in module globals: two stores of one process migrating
# at once (cases starting together) break each other, so their stores open one at a time
# (one lock per event loop: a lock belongs to the loop it is first awaited on).
_OPENING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary())


@dataclass(frozen=True, slots=True)
class Reply:
    """One agent's reply to the case's last turn, as the checks read it."""

    agent: str
    text: str
    tool_calls: tuple[tuple[str, dict[str, Any]], ...]
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cost: float | None  # US dollars from `spend.prices` (None: no price set for its model)
    prompt: tuple[str, ...] = ()  # what it saw, part by part (from its reply record)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class Answered:
    """What a case's run produced: the replies to its last turn, and the decoy's marker."""

    replies: tuple[Reply, ...]
    decoy: str | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())


class FreshStores:
    """Empty stores for cases: one database migrated once, copied for each case.

        async with FreshStores() as stores:
            backend = stores.backend(folder)     # a copy in `folder`, not opened yet
    """

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None

    @property
    def template(self) -> Path:
        assert self._folder is not None, "use `async with FreshStores()`"
        return Path(self._folder.name) / "template.db"

    async def __aenter__(self) -> FreshStores:
        self._folder = tempfile.TemporaryDirectory(prefix="threadline-eval-template-")
        async with (_OPENING.setdefault(asyncio.get_running_loop(), asyncio.Lock()),
                    build_backend(f"sqlite:///{self.template}", BackendOptions())):
            pass  # migrated on opening
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def backend(self, folder: Path) -> Backend:
        """A copy of the empty database in `folder` (its files directory beside it)."""
        target = folder / "eval.db"
        for suffix in ("", "-wal"):
            source = Path(f"{self.template}{suffix}")
            if source.exists():
                shutil.copyfile(source, Path(f"{target}{suffix}"))
        return build_backend(f"sqlite:///{target}", BackendOptions(
            files_directory=folder / "files"))


async def answer_case(case: Case, settings: Settings, *, cases_dir: Path,
                      stores: FreshStores | None = None) -> Answered:
    """Run `case` against `settings` in a store of its own (copied from `stores`, else made
    and migrated for it); the replies to its last turn."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="threadline-eval-") as folder:
        backend = stores.backend(Path(folder)) if stores is not None else build_backend(
            f"sqlite:///{Path(folder) / 'eval.db'}",
            BackendOptions(files_directory=Path(folder) / "files"))
        async with contextlib.AsyncExitStack() as opened:
            async with _OPENING.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
                await opened.enter_async_context(backend)
            assert backend.records is not None  # the SQL backend keeps them
            recorder = ReplyRecorder(backend.records)
            agents = build_agents(settings, backend=backend, provider=None, metrics=Metrics(),
                                  features=BuiltFeatures(), observer=recorder)
            try:
                decoy = await _store_decoy(backend) if case.expect.isolated else None
                indexer = await _indexer(settings, backend)
                results, inbound_id = await _run(case, settings, backend, agents,
                                                 indexer=indexer, cases_dir=cases_dir)
                await recorder.flush()
                prompts = await _prompts(backend, inbound_id)
            finally:
                await recorder.close()
                for agent in agents:
                    await agent.close()
    prices = _prices(settings)
    replies = tuple(_reply(r, prices.get(r.agent_name), prompts.get(r.agent_name, ()))
                    for r in results)
    return Answered(replies=replies, decoy=decoy, seconds=time.perf_counter() - started)


async def _indexer(settings: Settings, backend: Backend) -> VectorIndexer | None:
    """The indexer that embeds stored turns, when some agent recalls by meaning."""
    if backend.vectors is None or not any(
            a.memory.recall and a.memory.recall_by_meaning for a in settings.agents.values()):
        return None
    return indexer_for(backend.history, backend.vectors, await shared_embedder())


async def _run(case: Case, settings: Settings, backend: Backend, agents: list[Agent], *,
               indexer: VectorIndexer | None, cases_dir: Path) -> tuple[list[AgentResult], str]:
    if case.turn is not None:
        return await _replay_captured(case, backend, agents, indexer=indexer)
    intake, _ = files_for(settings, backend)
    team = Team(agents, files=intake)
    room = LocalChannel(name="eval", room=_slug(case.name))
    team.attach(room, respond_to_all=[name for name, agent in settings.agents.items()
                                      if any(e.respond_to_all for e in agent.channels)])
    await team.start()
    try:
        results: list[AgentResult] = []
        inbound_id = ""
        for said in case.conversation:
            if said.speaker in settings.agents:
                await backend.history.append(_agent_turn(room, said))
                continue
            message = await _with_files(room.message(said.text, user=said.speaker), said,
                                        intake=intake, cases_dir=cases_dir)
            if indexer is not None:
                await indexer.fill()
            results = await team.handle(message, room)
            inbound_id = message.id
    finally:
        # Each turn was answered before the next was sent: a turn still running here is one
        # the case's time limit cut off, and is not waited for.
        await team.stop(drain_timeout=STOP_SECONDS)
    if not inbound_id:
        raise ConfigError(f"case {case.name!r}: its conversation has no person's turn to answer")
    return results, inbound_id


async def _replay_captured(case: Case, backend: Backend, agents: list[Agent], *,
                           indexer: VectorIndexer | None) -> tuple[list[AgentResult], str]:
    """The stored turns put back as they were, then the captured turn answered by the agents
    that answered it (routing is not asked again: the turn went to them)."""
    assert case.turn is not None
    try:
        history = [message_from_dict(raw) for raw in case.history]
        inbound = message_from_dict(case.turn)
    except (KeyError, ValueError, TypeError) as exc:
        raise ConfigError(f"case {case.name!r}: a stored turn cannot be read ({exc!r}); "
                          "capture the case again") from exc
    await backend.history.append_many([*history, inbound])
    if indexer is not None:
        await indexer.fill()
    by_name = {a.name: a for a in agents}
    missing = [name for name in case.to if name not in by_name]
    if missing:
        raise ConfigError(f"case {case.name!r} goes to {', '.join(missing)}, which this config "
                          f"has no agent named (its agents: {', '.join(by_name)})")
    [stored] = await backend.history.get_by_ids(inbound.conversation_id, [inbound.id])
    results = [await by_name[name].invoke(stored, reason="captured") for name in case.to]
    return results, inbound.id


def _agent_turn(room: LocalChannel, said: Said) -> StoredMessage:
    message = room.message(said.text, user=said.speaker)
    return StoredMessage(id=f"{message.id}>{said.speaker}", conversation_id=message.conversation_id,
                         participant=Participant(kind="agent", id=said.speaker,
                                                 display_name=said.speaker),
                         content=said.text, metadata=message.metadata)


async def _with_files(message: StoredMessage, said: Said, *, intake: FileIntake | None,
                      cases_dir: Path) -> StoredMessage:
    """The turn with the case's files taken in as a platform's would be."""
    incoming = []
    for name in said.files:
        path = cases_dir / name
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"file {name!r} of a turn by {said.speaker}: cannot read {path} "
                              f"({exc.strerror})") from exc

        async def fetch(limit: int, data: bytes = data) -> bytes:
            return data

        incoming.append(IncomingFile(name=path.name, platform_id=name,
                                     declared_size=len(data), fetch=fetch))
    return await take_in(message, incoming, intake)


async def _store_decoy(backend: Backend) -> str:
    """Another person's turn in another conversation, holding a marker only it says."""
    marker = f"decoy-{secrets.token_hex(6)}"
    await backend.history.append(StoredMessage(
        id=f"{DECOY_CONVERSATION}:1", conversation_id=DECOY_CONVERSATION,
        participant=Participant(kind="user", id="someone-else", display_name="someone-else"),
        content=f"My account code is {marker}, keep it between us.",
        metadata=MessageMetadata(channel_type="local", channel_name="eval",
                                 channel_id="eval-decoy", message_id="1")))
    return marker


async def _prompts(backend: Backend, inbound_id: str) -> dict[str, tuple[str, ...]]:
    """What each agent saw for the turn, part by part, from its reply record."""
    assert backend.records is not None
    found: dict[str, tuple[str, ...]] = {}
    for listed in await backend.records.recent(limit=50):
        if listed.inbound_id != inbound_id or listed.agent in found:
            continue
        record = await backend.records.get(listed.id)
        detail = (record.detail if record is not None else None) or {}
        parts = (detail.get("prompt") or {}).get("parts") or []
        found[listed.agent] = tuple(str(p.get("content", "")) for p in parts)
    return found


def _prices(settings: Settings) -> dict[str, Any]:
    chosen = Providers(settings).agents
    return {name: price_for(settings, c.provider.plug.name, c.model)
            for name, c in chosen.items()}


def _reply(result: AgentResult, price: Any, prompt: Sequence[str]) -> Reply:
    usage = result.usage
    return Reply(agent=result.agent_name, text=result.output,
                 tool_calls=tuple((e.call.name, dict(e.call.input))
                                  for e in result.tool_exchanges),
                 input_tokens=usage.input_tokens + usage.cache_read_input_tokens
                 + usage.cache_creation_input_tokens, output_tokens=usage.output_tokens,
                 latency_ms=result.latency * 1000,
                 cost=price.cost(usage) if price is not None else None, prompt=tuple(prompt))


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "case"
