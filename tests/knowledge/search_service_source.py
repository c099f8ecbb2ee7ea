"""A knowledge source type from "another package": a team's own search service, asked over
HTTP. Registered through the `threadline.knowledge` entry-point group (`registered_in`), so
Threadline finds it without naming it; the service is a small aiohttp app on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from aiohttp import web
from pydantic import BaseModel, ConfigDict

from tests.cli.helpers import entry_point_package
from threadline.knowledge.source import (
    FoundSection,
    KnowledgeAsk,
    SourceContext,
    SourceType,
)

ARTICLES = [
    {"id": "kb-7", "title": "Warranty", "heading": "Claims", "link": "https://kb.example/7",
     "text": "Warranty claims need the receipt and the serial number."},
    {"id": "kb-9", "title": "Returns", "heading": "Opened boxes", "link": "https://kb.example/9",
     "text": "Opened boxes are taken back within fourteen days."},
]


class ServiceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    url: str


class ServiceSource:
    """Asks the service with the question and the conversation before it."""

    def __init__(self, context: SourceContext) -> None:
        assert isinstance(context.options, ServiceSettings)
        self._name = context.name
        self.url = context.options.url

    @property
    def name(self) -> str:
        return self._name

    async def search(self, ask: KnowledgeAsk, *, limit: int) -> list[FoundSection]:
        async with httpx.AsyncClient() as client:
            response = await client.post(self.url, json={
                "q": ask.question, "context": list(ask.earlier), "size": limit})
        return [FoundSection(id=hit["id"], source=self._name, document=hit["id"],
                             title=hit["title"], headings=(hit["heading"],), text=hit["text"],
                             token_count=len(hit["text"]) // 4, link=hit["link"])
                for hit in response.json()["hits"]]


SOURCE_TYPE = SourceType(name="faq_service", settings=ServiceSettings, build=ServiceSource)


def registered_in(site: Path) -> Path:
    return entry_point_package(site, distribution="faq-service-source",
                               group="threadline.knowledge", name="faq_service",
                               value=f"{__name__}:SOURCE_TYPE")


@asynccontextmanager
async def search_service() -> AsyncIterator[tuple[str, list[dict[str, object]]]]:
    """The service's URL and the queries it was sent; it answers articles sharing a word."""
    asked: list[dict[str, object]] = []

    async def answer(request: web.Request) -> web.Response:
        query = await request.json()
        asked.append(query)
        words = set(str(query["q"]).lower().split())
        hits = [a for a in ARTICLES if words & set(a["text"].lower().split())]
        return web.json_response({"hits": hits[:int(query["size"])]})

    app = web.Application()
    app.router.add_post("/search", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/search", asked
    finally:
        await runner.cleanup()
