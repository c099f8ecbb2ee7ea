"""The built-in source type `documents`: a folder, single files and web pages, kept in the
deployment's backend and searched by recall's engine.

    sources:
      help:
        type: documents
        folder: ./help-centre           # Markdown, text, HTML, PDF, in any depth
        files: [./policies/refunds.pdf]
        urls: ["https://status.example.com/faq.html"]
        link: "https://help.example.com/{stem}"   # where a cited section can be opened

URLs are fetched only by `threadline knowledge sync`, the operator's command: nothing is
downloaded while the bot answers. A file over `max_file_bytes`, a symbolic link that leads
out of the folder, hidden files and kinds that are not read are reported, never followed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path, PurePosixPath

import httpx
from pydantic import BaseModel, ConfigDict, Field

from threadline.knowledge.documents import Document, Problem, kind_of, read_document
from threadline.knowledge.retrieval import search_source
from threadline.knowledge.source import (
    FoundSection,
    KnowledgeAsk,
    SourceContext,
    SourceType,
)
from threadline.knowledge.sync import SyncProgress, SyncReport, sync_documents

URL_SECONDS = 30.0


class DocumentsSettings(BaseModel):
    """A folder, single files and web pages to answer from."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field("documents", description="The source type (`documents`, or one a "
                                               "package registers).")
    folder: str | None = Field(None, description="A folder of Markdown, text, HTML and PDF "
                                                 "files (read in any depth; relative to the "
                                                 "config file).")
    files: list[str] = Field(default_factory=list, description="Single files to read.")
    urls: list[str] = Field(default_factory=list, description="Pages fetched by `threadline "
                                                              "knowledge sync` only.")
    link: str | None = Field(None, description="Where a cited document can be opened: a "
                                               "template with {path} (relative path) and "
                                               "{stem} (its name without suffix).")
    max_file_bytes: int = Field(10_000_000, gt=0, description="Larger files are reported "
                                                              "and skipped.")
    section_tokens: int = Field(250, ge=50, description="Sections longer than this are cut "
                                                        "into parts at paragraph boundaries.")


class DocumentsSource:
    """A `SyncedSource` over documents read from disk and the web (see the module doc)."""

    def __init__(self, context: SourceContext) -> None:
        assert isinstance(context.options, DocumentsSettings)
        self.settings = context.options
        self._name = context.name
        self.history = context.history
        self.config_dir = context.config_dir
        self.counter = context.counter
        self.by_meaning = True

    @property
    def name(self) -> str:
        return self._name

    async def search(self, ask: KnowledgeAsk, *, limit: int) -> list[FoundSection]:
        return await search_source(self.history, self._name, ask, limit=limit,
                                   by_meaning=self.by_meaning)

    async def sync(self, progress: SyncProgress) -> SyncReport:
        return await sync_documents(self.history, self._name, self.documents(),
                                    counter=self.counter,
                                    section_tokens=self.settings.section_tokens,
                                    progress=progress)

    async def documents(self) -> AsyncIterator[Document | Problem]:
        """Every document of the source, read, or the problem that stopped it."""
        if self.settings.folder:
            root = self._path(self.settings.folder)
            if not root.is_dir():
                yield Problem(self.settings.folder, f"no folder at {root}; fix `folder:`")
            else:
                for found in await asyncio.to_thread(_folder_files, root):
                    if isinstance(found, Problem):
                        yield found
                    else:
                        yield await self._read_file(found, root=root)
        for name in self.settings.files:
            path = self._path(name)
            yield await self._read_file(path, root=path.parent, key=name)
        if self.settings.urls:
            async with httpx.AsyncClient(timeout=URL_SECONDS, follow_redirects=True) as client:
                for url in self.settings.urls:
                    yield await self._fetch(client, url)

    def _path(self, name: str) -> Path:
        path = Path(name).expanduser()
        return path if path.is_absolute() else self.config_dir / path

    def _link(self, relative: str) -> str | None:
        if self.settings.link is None:
            return None
        return self.settings.link.format(path=relative, stem=PurePosixPath(relative).stem)

    async def _read_file(self, path: Path, *, root: Path, key: str | None = None
                         ) -> Document | Problem:
        relative = key or path.relative_to(root).as_posix()
        kind = kind_of(path.name)
        if kind is None:
            return Problem(relative, f"{path.suffix or 'a file without a suffix'} is not read "
                                     "(Markdown, text, HTML and PDF are); skipped")
        try:
            data = await asyncio.to_thread(_bytes_within, path, self.settings.max_file_bytes)
        except OSError as exc:
            return Problem(relative, f"cannot be read: {exc.strerror or exc}")
        if data is None:
            return Problem(relative, f"over max_file_bytes ({self.settings.max_file_bytes:,} "
                                     "bytes); split it or raise the limit")
        return await read_document(data, key=relative, kind=kind, link=self._link(relative))

    async def _fetch(self, client: httpx.AsyncClient, url: str) -> Document | Problem:
        try:
            async with client.stream("GET", url) as response:
                if response.status_code != 200:
                    return Problem(url, f"answered HTTP {response.status_code}; skipped")
                data = bytearray()
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > self.settings.max_file_bytes:
                        return Problem(url, f"over max_file_bytes "
                                            f"({self.settings.max_file_bytes:,}); skipped")
                media_type = response.headers.get("content-type")
        except httpx.HTTPError as exc:
            return Problem(url, f"could not be fetched: {type(exc).__name__}: {exc}")
        kind = kind_of(PurePosixPath(httpx.URL(url).path).name, media_type)
        if kind is None:
            return Problem(url, f"is {media_type or 'of no stated type'}, not a page or "
                                "document that is read; skipped")
        return await read_document(bytes(data), key=url, kind=kind, link=url)


def _bytes_within(path: Path, limit: int) -> bytes | None:
    """The file's bytes, or None when it holds more than `limit` (never read past it)."""
    with path.open("rb") as file:
        data = file.read(limit + 1)
    return data if len(data) <= limit else None


def _folder_files(root: Path) -> list[Path | Problem]:
    """The folder's files in name order; a link out of it is a problem, hidden files and
    folders are passed over."""
    found: list[Path | Problem] = []
    resolved_root = root.resolve()
    for folder, folders, files in os.walk(root, followlinks=False):
        folders[:] = sorted(d for d in folders if not d.startswith("."))
        here = Path(folder)
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = here / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(resolved_root):
                    found.append(Problem(relative, f"a symbolic link to {target}, outside the "
                                                   "folder; not followed"))
                    continue
            found.append(path)
        for name in list(folders):
            link = here / name
            if link.is_symlink():
                found.append(Problem(link.relative_to(root).as_posix() + "/",
                                     "a symbolic link to a folder; not followed"))
    return found


def _build(context: SourceContext) -> DocumentsSource:
    return DocumentsSource(context)


SOURCE_TYPE = SourceType(name="documents", settings=DocumentsSettings, build=_build)
