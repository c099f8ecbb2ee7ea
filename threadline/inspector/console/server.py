"""The console: server-rendered pages showing what each agent saw, with charts and replay.

    app = console_app(records=records, store=store, redactor=redactor, token=None)
    OpsServer(..., apps={"/console": app})           # inside `threadline run`
    await serve_console(app, host="127.0.0.1", port=9109)   # `threadline console CONFIG`

Pages (under /console): the conversations, one conversation's turns and recorded replies, one
record (budget bar, the prompt part by part, model calls, tool exchanges, replay), charts per
agent. `/console/api/...` gives the same as JSON. Templates are Jinja2 with autoescaping on,
so message text (HTML, Markdown, `<script>`) shows as text; pages load no script at all (the
Content-Security-Policy says so) and every response passes the redactor.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from functools import partial
from typing import Any

import structlog
from aiohttp import web
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from threadline.errors import ThreadlineError
from threadline.history.beside import parts_beside
from threadline.history.model import utc_now
from threadline.history.store import ConversationStore
from threadline.inspector.console.auth import (
    COOKIE,
    LoginThrottle,
    authorized,
    cookie_value,
    foreign_request,
    token_matches,
)
from threadline.inspector.console.charts import charts_by_agent
from threadline.inspector.console.feedback import (
    as_rows,
    down_voted,
    satisfaction,
    satisfaction_charts,
)
from threadline.inspector.console.live import LiveTurns
from threadline.inspector.record import PARTS, ReplyRecord
from threadline.inspector.records import ReplyRecords
from threadline.inspector.redaction import Redactor
from threadline.inspector.replay import MODES, Replayer

log = structlog.get_logger("threadline.console")

PREFIX = "/console"
TURNS_SHOWN = 200
CHART_RECORDS = 500
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _redacted(redactor: Redactor, value: Any) -> Any:
    if value is None or isinstance(value, int | float):
        return value
    return redactor.text(value if isinstance(value, str) else str(value))


def _environment(redactor: Redactor) -> Environment:
    # `finalize` sees every value a template prints before autoescaping does: a secret is
    # redacted while it still reads as itself (escaped, `a&b` would no longer match).
    env = Environment(loader=PackageLoader("threadline.inspector.console", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      finalize=partial(_redacted, redactor))
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False,
                                                     sort_keys=True, default=str)
    return env


class Console:
    """The console's handlers over the records, the store and (optionally) a replayer."""

    def __init__(self, *, records: ReplyRecords, store: ConversationStore, redactor: Redactor,
                 token: str | None, replayer: Replayer | None, prefix: str,
                 trace_url: str | None = None) -> None:
        self.records = records
        self.trace_url = trace_url  # the operator's tracing tool, with {trace_id}
        self.store = store
        self.redactor = redactor
        self.token = token
        self.replayer = replayer
        self.prefix = prefix
        self.templates = _environment(redactor)
        self.templates.globals["trace_link"] = self.trace_link
        self.throttle = LoginThrottle()

    # -- plumbing ----------------------------------------------------------------------

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Token check first, then the handler; every answer is redacted and hardened."""
        login = request.path == f"{self.prefix}/login" and request.method == "POST"
        refused = foreign_request(request, self.token)
        if refused is not None:
            response: web.StreamResponse = self._page("error.html", status=403,
                                                      message=refused)
        elif not login and not authorized(request, self.token):
            response = self._unauthorized(request)
        else:
            try:
                response = await handler(request)
            except ThreadlineError as exc:
                response = self._page("error.html", status=400, message=str(exc))
        if isinstance(response, web.Response) and response.body is not None and isinstance(
                response.body, bytes) and self.redactor:
            response.body = self.redactor.text(response.body.decode("utf-8")).encode("utf-8")
        response.headers.update(_HEADERS)
        return response

    def _unauthorized(self, request: web.Request) -> web.Response:
        if request.path.startswith(f"{self.prefix}/api/"):
            return web.json_response({"error": "unauthorized: send Authorization: Bearer "
                                               "TOKEN"}, status=401)
        return self._page("login.html", status=401, failed=False)

    def _page(self, name: str, *, status: int = 200, **values: Any) -> web.Response:
        html = self.templates.get_template(name).render(
            base=self.prefix, parts=PARTS, authenticated=self.token is not None, **values)
        return web.Response(text=html, status=status, content_type="text/html",
                            charset="utf-8")

    # -- login ---------------------------------------------------------------------------

    async def login(self, request: web.Request) -> web.Response:
        client = request.remote or "unknown"
        wait = self.throttle.retry_after(client)
        if wait is not None:
            log.warning("console.login_throttled", client=client, retry_after=round(wait))
            response = self._page("error.html", status=429, message=(
                f"too many failed logins from {client}; try again in {wait:.0f} s"))
            response.headers["Retry-After"] = str(int(wait + 0.999))
            return response
        form = await request.post()
        given = str(form.get("token", ""))
        if self.token is None or not token_matches(given, self.token):
            self.throttle.failed(client)
            return self._page("login.html", status=401, failed=True)
        response = web.HTTPSeeOther(f"{self.prefix}/")
        response.set_cookie(COOKIE, cookie_value(self.token), httponly=True, samesite="Strict",
                            path=self.prefix)
        raise response

    # -- pages ---------------------------------------------------------------------------

    async def conversations(self, request: web.Request) -> web.Response:
        listing = await self._conversations()
        if request.path.startswith(f"{self.prefix}/api/"):
            return web.json_response(listing)
        return self._page("conversations.html", conversations=listing)

    async def _conversations(self) -> list[dict[str, Any]]:
        recorded = {c.conversation_id: c for c in await self.records.conversations(limit=500)}
        rows: dict[str, dict[str, Any]] = {}
        for info in await self.store.list_conversations(limit=500):
            rows[info.conversation_id] = {
                "conversation_id": info.conversation_id, "turns": info.message_count,
                "last_activity": f"{info.last_activity:%Y-%m-%d %H:%M:%S}", "replies": 0}
        for cid, known in recorded.items():
            row = rows.setdefault(cid, {"conversation_id": cid, "turns": None,
                                        "last_activity": f"{known.last_reply:%Y-%m-%d %H:%M:%S}"})
            row["replies"] = known.replies
        return sorted(rows.values(), key=lambda r: r["last_activity"], reverse=True)

    async def conversation(self, request: web.Request) -> web.Response:
        cid = request.query.get("id", "")
        if not cid:
            raise web.HTTPBadRequest(text="pass ?id=CONVERSATION_ID")
        records = await self.records.recent(cid, limit=TURNS_SHOWN)
        turns = await self.store.get(cid, limit=TURNS_SHOWN, include_summaries=True)
        if request.path.startswith(f"{self.prefix}/api/"):
            return web.json_response({"conversation_id": cid,
                                      "records": [r.as_dict() for r in records]})
        by_outbound = {r.outbound_id: r for r in records if r.outbound_id}
        return self._page("conversation.html", conversation_id=cid, turns=turns,
                          records=records, by_outbound=by_outbound)

    async def record(self, request: web.Request) -> web.Response:
        record = await self.records.get(request.match_info["record_id"])
        if record is None:
            raise web.HTTPNotFound(text="no such reply record")
        if request.path.startswith(f"{self.prefix}/api/"):
            return web.json_response(record.as_dict())
        return self._page("record.html", record=record, detail=record.detail or {},
                          replay=self.replayer is not None, modes=MODES)

    def trace_link(self, record: ReplyRecord) -> str | None:
        """Where the record's trace is in the operator's tracing tool (`tracing.trace_url`)."""
        if self.trace_url is None or record.trace_id is None:
            return None
        return self.trace_url.replace("{trace_id}", record.trace_id)

    async def charts(self, request: web.Request) -> web.Response:
        try:
            days = float(request.query.get("days", "7") or 7)
        except ValueError:
            raise web.HTTPBadRequest(text="days must be a number, e.g. ?days=7") from None
        records = await self.records.recent(since=utc_now() - timedelta(days=days),
                                            limit=CHART_RECORDS)
        charts = charts_by_agent(records)
        if request.path.startswith(f"{self.prefix}/api/"):
            return web.json_response({agent: [{"title": c.title, "unit": c.unit,
                                               "count": c.count, "y_max": c.y_max}
                                              for c in found] for agent, found in charts.items()})
        return self._page("charts.html", charts=charts, days=days)

    async def feedback(self, request: web.Request) -> web.Response:
        """Satisfaction per agent and day, and the down-voted replies with what was seen."""
        try:
            days = float(request.query.get("days", "30") or 30)
        except ValueError:
            raise web.HTTPBadRequest(text="days must be a number, e.g. ?days=30") from None
        book = parts_beside(self.store).feedback
        by_agent = await satisfaction(book, days=days) if book is not None else {}
        down = await down_voted(book, self.records) if book is not None else []
        if request.path.startswith(f"{self.prefix}/api/"):
            return web.json_response({"kept": book is not None, "days": days,
                                      "satisfaction": as_rows(by_agent),
                                      "down_voted": [d.as_dict() for d in down]})
        return self._page("feedback.html", kept=book is not None, days=days,
                          by_agent=by_agent, charts=satisfaction_charts(by_agent), down=down)

    async def replay(self, request: web.Request) -> web.Response:
        if self.replayer is None:
            raise web.HTTPNotFound(text="replay needs the config: run `threadline console "
                                        "CONFIG` or the console of `threadline run`")
        form = await request.post()
        mode = str(form.get("mode", "current"))
        if mode not in MODES:
            raise web.HTTPBadRequest(text=f"mode must be one of {', '.join(MODES)}")
        model = str(form.get("model", "")).strip() or None
        outcome = await self.replayer.replay(request.match_info["record_id"], model=model,
                                             mode="current" if mode == "current" else "recorded")
        log.info("console.replayed", record=outcome.record.id, model=outcome.model, mode=mode)
        return self._page("replay.html", outcome=outcome, record=outcome.record,
                          detail=outcome.record.detail or {})


def console_app(*, records: ReplyRecords, store: ConversationStore, redactor: Redactor,
                token: str | None = None, replayer: Replayer | None = None,
                prefix: str = PREFIX, trace_url: str | None = None) -> web.Application:
    """The console as an aiohttp application, to mount at `prefix` (or serve standalone)."""
    console = Console(records=records, store=store, redactor=redactor, token=token,
                      replayer=replayer, prefix=prefix, trace_url=trace_url)
    app = web.Application(middlewares=[console.guard])
    live = LiveTurns(store=store, redactor=redactor)
    app.on_shutdown.append(live.close)
    app.router.add_get("/conversation/live", partial(live.stream, api=False, headers=_HEADERS))
    app.router.add_get("/api/conversation/live", partial(live.stream, api=True,
                                                         headers=_HEADERS))
    app.router.add_get("/", console.conversations)
    app.router.add_get("/conversation", console.conversation)
    app.router.add_get("/records/{record_id}", console.record)
    app.router.add_post("/records/{record_id}/replay", console.replay)
    app.router.add_get("/charts", console.charts)
    app.router.add_get("/api/conversations", console.conversations)
    app.router.add_get("/api/conversation", console.conversation)
    app.router.add_get("/api/records/{record_id}", console.record)
    app.router.add_get("/api/charts", console.charts)
    app.router.add_get("/feedback", console.feedback)
    app.router.add_get("/api/feedback", console.feedback)
    app.router.add_post("/login", console.login)
    app.router.add_static("/static", _static_folder(), show_index=False)
    return app


def _static_folder() -> str:
    from importlib.resources import files

    return str(files("threadline.inspector.console") / "static")


def standalone_app(console: web.Application, prefix: str = PREFIX) -> web.Application:
    """The console under `prefix` with `/` sending there (for `threadline console`)."""
    app = web.Application()

    async def home(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"{prefix}/")

    app.router.add_get("/", home)
    app.add_subapp(prefix, console)
    return app
