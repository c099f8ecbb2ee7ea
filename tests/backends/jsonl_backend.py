"""A backend that lives outside threadline, as a third-party package's would: the history in
one JSON Lines file (`jsonl:///PATH`), and nothing else.

It registers through the `threadline.backends` entry point group (`registered_in`), so config,
runtime and CLI find it by the store URL's scheme without naming it. It keeps no inbox, people
directory, spend ledger or reply records: the runtime must say so at start, and still answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from tests.cli.helpers import entry_point_package
from threadline.backends import Backend, BackendOptions, BackendPlug
from threadline.errors import ConfigError
from threadline.history.codec import message_from_dict, message_to_dict
from threadline.history.memory import InMemoryConversationStore
from threadline.history.model import StoredMessage

SCHEME = "jsonl"


class JsonLinesHistory(InMemoryConversationStore):
    """The in-memory history, loaded from its file when opened and appended to on each write."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    async def __aenter__(self) -> JsonLinesHistory:
        if self.path.exists():
            lines = self.path.read_text(encoding="utf-8").splitlines()
            await super().append_many([message_from_dict(json.loads(x)) for x in lines if x])
        return self

    async def append_many(self, messages: Sequence[StoredMessage]) -> list[bool]:
        flags = await super().append_many(messages)
        kept = [m for m, stored in zip(messages, flags, strict=True) if stored]
        with self.path.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps(message_to_dict(m)) + "\n" for m in kept)
        return flags

    async def append(self, message: StoredMessage) -> bool:
        return (await self.append_many([message]))[0]


def _path(url: str) -> Path:
    return Path(urlsplit(url).path)


def build(url: str, options: BackendOptions) -> Backend:
    return Backend(name=SCHEME, history=JsonLinesHistory(_path(url)), shown_url=url)


def check_url(url: str) -> None:
    if not urlsplit(url).path:
        raise ConfigError(f"store URL {url!r}: write jsonl:///PATH")


BACKEND = BackendPlug(name=SCHEME, schemes=(SCHEME,), build=build, check_url=check_url)


def registered_in(site: Path) -> Path:
    """A distribution in `site` (a folder to put on the path) that registers this backend."""
    return entry_point_package(site, distribution="threadline-jsonl-backend",
                               group="threadline.backends", name=SCHEME,
                               value=f"{__name__}:BACKEND")
