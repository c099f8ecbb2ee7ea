"""What a backend hands the app: typed parts, opened once, and what it lacks said in plain words.

    BACKEND = BackendPlug(name="sql", schemes=("sqlite", "postgresql"), build=build,
                          check_url=check_url)

A backend is chosen by the scheme of the store URL (`threadline.backends.registry`). Its
`build(url, options)` constructs a `Backend` without touching the database; `async with
backend:` opens it (connects, migrates) and closes it. Whoever builds the app (`Runtime`, the
CLI, `Threadline`) asks it for parts and injects them; nothing outside `threadline/backends/`
asks a store what it can do.

A backend must give the history (`ConversationStore`). It need not give the rest: a part that
is None is said once at start (`Backend.missing`), and the feature that needs it is off rather
than kept in process memory where it would vanish at restart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

from threadline.after_delivery import WritesTogether
from threadline.agents.approvals import ApprovalBook
from threadline.channels.shard_leases import ShardLeases
from threadline.feedback.votes import FeedbackBook
from threadline.handoff.book import HandoffBook
from threadline.history.file_store import DEFAULT_INLINE_MAX_BYTES, FileStore
from threadline.history.inbox import TurnInbox
from threadline.history.store import ConversationStore, SpeakerSearchStore
from threadline.history.vectors import VectorIndex
from threadline.inspector.records import ReplyRecords
from threadline.locks import ConversationLock
from threadline.people.directory import PeopleDirectory
from threadline.people.link_requests import LinkRequests
from threadline.schedules.book import ScheduleBook
from threadline.spend.ledger import SpendLedger


@dataclass(frozen=True, slots=True)
class BackendOptions:
    """The `store:` settings a backend may use beyond its URL."""

    busy_timeout: float = 5.0
    outbox_path: Path | None = None
    # Where files over `files_inline_max_bytes` are written (None: such a file is refused).
    files_directory: Path | None = None
    files_inline_max_bytes: int = DEFAULT_INLINE_MAX_BYTES


@dataclass(slots=True)
class Backend:
    """One opened store and everything kept beside it.

    `inbox`: turns waiting to be answered and the reply ledger (None: process memory, which is
    what "waiting" means for a store one process serves). `lock`: owns a conversation across
    processes (None: this process is the only one). `outbox_path`: where turns wait on disk
    when the history cannot take them (None: they are not kept past the process either).
    `owner_file`: a file a second process must not share (a SQLite database). `notices` are
    further plain lines said once at start (for example "nothing survives a restart").
    """

    name: str
    history: ConversationStore
    # The store URL as logs and messages may show it (no password).
    shown_url: str = ""
    inbox: TurnInbox | None = None
    people: PeopleDirectory | None = None
    # Links waiting for consent and wrong codes counted (with `people`, or none at all).
    link_requests: LinkRequests | None = None
    # Searches one person's turns across conversations (person memory); None: no person memory.
    speakers: SpeakerSearchStore | None = None
    spend: SpendLedger | None = None
    records: ReplyRecords | None = None
    schedules: ScheduleBook | None = None
    handoffs: HandoffBook | None = None
    # Tool calls waiting for a person's approval; None: tools that need approval are not run.
    approvals: ApprovalBook | None = None
    # People's votes on replies (the feedback feature); None: feedback buttons are off.
    feedback: FeedbackBook | None = None
    # The bytes of turns' files, once per hash; None: files sent with turns are not kept.
    files: FileStore | None = None
    # One vector per turn for meaning-based recall; None: recall is lexical only.
    vectors: VectorIndex | None = None
    # Which replica holds which gateway shard (Discord); None: shards cannot be shared.
    shard_leases: ShardLeases | None = None
    lock: ConversationLock | None = None
    # Commits a delivered reply's writes (ledger, history, inbox, spend) in one transaction;
    # None: each is written on its own (`threadline.after_delivery`).
    together: WritesTogether | None = None
    # How to make what the backend keeps for one platform, by its name: a Slack app's
    # installations in many workspaces under "slack" (`threadline.channels.slack.
    # installations`). Made when a channel of that platform is built, so a backend never
    # imports a platform's SDK that no channel uses; a platform that needs its part and finds
    # none says so.
    platform_parts: Mapping[str, Callable[[], object]] = field(default_factory=dict)
    outbox_path: Path | None = None
    owner_file: Path | None = None
    notifies_across_processes: bool = False
    notices: tuple[str, ...] = field(default=())

    def platform_part(self, platform: str) -> object | None:
        """What the backend keeps for `platform` (None: nothing)."""
        make = self.platform_parts.get(platform)
        return make() if make is not None else None

    def missing(self) -> list[str]:
        """One plain line per part this backend does not keep, and what is off because of it."""
        return [*self.notices, *(f"backend {self.name} {said}" for parts, said in _MISSING_PARTS
                                 if any(getattr(self, part) is None for part in parts))]

    async def __aenter__(self) -> Self:
        await self.history.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """Release the lock's connections, then the history's; the parts are unusable after."""
        try:
            if self.lock is not None:
                await self.lock.close()
        finally:
            await self.history.close()


@dataclass(frozen=True, slots=True)
class BackendPlug:
    """One kind of store: the URL schemes it serves, how to build it, how to check a URL.

    `check_url` raises `ConfigError` saying what to write instead. A backend whose history
    may be built directly (tests, embedders) registers how to find its parts around one with
    `threadline.history.beside.add_adopter`.
    """

    name: str
    schemes: tuple[str, ...]
    build: Callable[[str, BackendOptions], Backend]
    check_url: Callable[[str], None]


# What is off when a backend lacks a part (or any of a group of parts), said once at start.
_MISSING_PARTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("inbox",), "keeps no inbox: turns waiting to be answered are held in this process and "
                 "lost at restart"),
    (("records",), "keeps no reply records: the inspector is off"),
    (("people",), "keeps no people directory: link codes, person memory, export and "
                  "forgetting a person are off"),
    (("outbox_path",), "keeps no outbox: a turn its history refuses is not kept on disk to be "
                       "retried"),
    (("speakers",), "cannot search one person's turns across conversations: person memory "
                    "is off"),
    (("schedules", "handoffs"), "keeps no schedule book or handoffs: scheduled turns and "
                                "handing a conversation to people are off"),
    (("approvals",), "keeps no approval book: tools that need a person's approval are not run"),
    (("files",), "keeps no files: the bytes of files sent with turns are not kept (pictures "
                 "are not seen, exports carry none)"),
    (("vectors",), "keeps no vectors: recall finds turns by their words only, not their "
                   "meaning"),
    (("spend",), "keeps no spend ledger: daily budgets cannot be enforced"),
    (("shard_leases",), "keeps no shard leases: a channel with `shards:` holds every shard in "
                        "this process, so run one replica"),
)
