"""`threadline inspect ...` and `threadline console`: what each agent saw, on the command line
and in a browser.

    threadline inspect list telegram:42 --db threadline.db     # newest replies, one a line
    threadline inspect show 3f2a9c1e --db threadline.db        # one record, readable
    threadline inspect show 3f2a9c1e --json                    # the whole record, for scripts
    threadline inspect replay 3f2a9c1e --config threadline.yaml --model claude-haiku-4-5
    threadline inspect prune --older-than 30
    threadline console                                         # the web console alone
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from threadline.backends import build_backend, open_backend
from threadline.backends.registry import DEFAULT_STORE_URL
from threadline.cli.history import require_database, store_url
from threadline.config import Settings, load_settings
from threadline.errors import ConfigError
from threadline.inspector.console.auth import require_safe_bind
from threadline.inspector.console.server import PREFIX, standalone_app
from threadline.inspector.record import ReplyRecord
from threadline.inspector.records import ReplyRecords
from threadline.inspector.redaction import redactor_for
from threadline.inspector.replay import ReplayOutcome
from threadline.inspector.retention import cutoff, prune_records
from threadline.inspector.setup import Inspector
from threadline.listening import Listener, serve

ACTIONS = {
    "list": "List recent replies (of one conversation, or all), newest first.",
    "show": "Show one reply record: why the agent answered, its prompt, calls, tools, reply.",
    "replay": "Answer a recorded turn again (today's options or another model); posts nothing.",
    "prune": "Delete reply records older than a number of days (the history stays).",
}
DEFAULT_CONSOLE_PORT = 9109
PREVIEW = 160


def add_arguments(action: str, parser: argparse.ArgumentParser) -> None:
    if action == "list":
        parser.add_argument("conversation", nargs="?", help="conversation id (default: all)")
        parser.add_argument("--agent", help="only this agent's replies")
        parser.add_argument("--limit", type=int, default=20, help="how many (default 20)")
        parser.add_argument("--json", action="store_true", help="JSON Lines instead of text")
    elif action == "show":
        parser.add_argument("record", help="record id (or its first 8+ characters)")
        parser.add_argument("--json", action="store_true", help="the whole record as JSON")
    elif action == "replay":
        parser.add_argument("record", help="record id (or its first 8+ characters)")
        parser.add_argument("--model", help="another model (default: the agent's current one)")
        parser.add_argument("--recorded", action="store_true",
                            help="send the recorded prompt as it was (default: assemble it "
                                 "again with the current options)")
    elif action == "prune":
        parser.add_argument("--older-than", type=float, required=True, metavar="DAYS",
                            dest="older_than", help="delete records older than DAYS days")


def add_console_arguments(parser: argparse.ArgumentParser) -> None:
    """The console's own arguments (the config comes from `cli.config_file`)."""
    parser.add_argument("--db", metavar="PATH", help="SQLite file instead of a config")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; others need a token)")
    parser.add_argument("--port", type=int, default=DEFAULT_CONSOLE_PORT,
                        help=f"port (default {DEFAULT_CONSOLE_PORT}; 0 picks a free one)")


# -- text ------------------------------------------------------------------------------------


def _short(text: str, limit: int = PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def format_line(record: ReplyRecord) -> str:
    """One record in a listing."""
    error = f"  error: {_short(record.error, 80)}" if record.error else ""
    return (f"{record.id}  {record.created_at:%Y-%m-%d %H:%M:%S}  {record.conversation_id}  "
            f"{record.agent} ({record.addressed_because or '-'})  {record.stop_reason}  "
            f"{record.prompt_tokens}/{record.token_budget} prompt tokens  "
            f"{record.latency_ms:.0f} ms  {_short(record.reply, 60)!r}{error}")


def format_record(record: ReplyRecord) -> str:
    """One record, readable top to bottom: why, what it saw, what it did, what it said."""
    detail = record.detail or {}
    prompt = detail.get("prompt") or {}
    hit = (f" ({record.cache_hit_rate:.0%} from cache)" if record.cache_hit_rate is not None
           else "")
    summary = ("created" if prompt.get("summary_created")
               else "used" if prompt.get("summary_used") else "none")
    inbound = detail.get("inbound") or {}
    lines = [
        f"reply record {record.id}",
        f"  {record.agent} in {record.conversation_id} at {record.created_at:%Y-%m-%d %H:%M:%S}"
        " UTC",
        f"  why it answered: {record.addressed_because or 'not routed by a team'}",
        f"  answering: {(inbound.get('participant') or {}).get('name', '?')}: "
        f"{_short(inbound.get('content', ''))}",
        f"  model {record.model}, {record.model_calls} call(s), stop {record.stop_reason}, "
        f"{record.latency_ms:.1f} ms",
        f"  tokens: {record.input_tokens} in, {record.output_tokens} out, "
        f"{record.cache_read_tokens} cache read, {record.cache_write_tokens} cache write{hit}",
        f"prompt: {prompt.get('token_count', 0)} of {prompt.get('token_budget', 0)} tokens; "
        f"kept {len(prompt.get('included_ids', []))} turns, filtered "
        f"{len(prompt.get('filtered_ids', []))}, dropped "
        f"{len(prompt.get('dropped_for_budget_ids', []))} for the budget, recalled "
        f"{len(prompt.get('recalled_ids', []))}; summary {summary}",
    ]
    lines += [f"  note: {note}" for note in prompt.get("notes", [])]
    lines += [f"  [{p['part']}] {p['role']} ({p['tokens']} tokens): {_short(p['content'])}"
              for p in prompt.get("parts", [])]
    if prompt.get("recalled_ids"):
        lines.append(f"  recalled ids: {', '.join(prompt['recalled_ids'])}; the search matched "
                     f"{', '.join(prompt.get('recall_hit_ids', []))} (best first)")
    lines.append(f"tools offered: {', '.join(detail.get('tools', [])) or 'none'}")
    lines.append("model calls:")
    for number, call in enumerate(detail.get("model_calls", []), start=1):
        usage = call.get("usage") or {}
        stop = (call.get("response") or {}).get("stop_reason", "-")
        lines.append(f"  {number}. {call['model']} {stop}: {usage.get('input_tokens', 0)} in, "
                     f"{usage.get('output_tokens', 0)} out, "
                     f"{usage.get('cache_read_input_tokens', 0)} cache read, "
                     f"{call['latency_ms']:.1f} ms"
                     + (f"; error: {call['error']}" if call.get("error") else ""))
    for exchange in detail.get("tool_exchanges", []):
        call, result = exchange["call"], exchange["result"]
        failed = " (failed)" if result.get("is_error") else ""
        lines.append(f"tool {call['name']}({json.dumps(call['input'], sort_keys=True)}){failed}"
                     f" -> {_short(result['content'])}")
    lines.append(f"reply: {record.reply}")
    delivered = ", ".join(detail.get("delivered_ids", [])) or "not posted"
    lines.append(f"delivered as: {delivered}")
    if record.error:
        lines.append(f"error: {record.error}")
    if record.trace_id:
        lines.append(f"trace: {record.trace_id}")
    return "\n".join(lines)


def format_replay(outcome: ReplayOutcome) -> str:
    """A replay beside its record: the two replies, then the two prompts' parts."""
    record = outcome.record
    recorded_parts = ((record.detail or {}).get("prompt") or {}).get("parts", [])
    mode = ("assembled again with the current options" if outcome.mode == "current"
            else "as recorded")
    lines = [f"replay of {record.id} ({record.agent} in {record.conversation_id}); prompt "
             f"{mode}; nothing was posted or stored, no tool was run",
             f"recorded  {record.model}: {record.reply}",
             f"replayed  {outcome.model}: {outcome.reply}"]
    lines += [f"          asked for {c['name']}({json.dumps(c['input'], sort_keys=True)}),"
              " not run" for c in outcome.tool_calls]
    lines.append(f"prompt parts (recorded {len(recorded_parts)} | replayed {len(outcome.parts)}):")
    for index in range(max(len(recorded_parts), len(outcome.parts))):
        left = recorded_parts[index] if index < len(recorded_parts) else None
        right = outcome.parts[index] if index < len(outcome.parts) else None
        lines.append(f"  {_part(left):<70} | {_part(right)}")
    return "\n".join(lines)


def _part(part: dict[str, Any] | None) -> str:
    if part is None:
        return "-"
    return _short(f"[{part['part']}] {part['content']}", 70)


# -- commands --------------------------------------------------------------------------------


async def _list(records: ReplyRecords, args: argparse.Namespace) -> int:
    found = await records.recent(args.conversation, agent=args.agent, limit=args.limit)
    if not found:
        print("no reply records" + (f" for {args.conversation!r}" if args.conversation else "")
              + " yet", file=sys.stderr)
    for record in found:
        print(json.dumps(record.as_dict(), ensure_ascii=False, sort_keys=True) if args.json
              else format_line(record))
    return 0


async def _show(records: ReplyRecords, args: argparse.Namespace) -> int:
    record = await records.get(args.record)
    if record is None:
        raise ConfigError(f"no reply record {args.record!r} (or the prefix matches several); "
                          "`threadline inspect list` shows the ids")
    print(json.dumps(record.as_dict(), ensure_ascii=False, sort_keys=True, indent=2)
          if args.json else format_record(record))
    return 0


async def _prune(records: ReplyRecords, args: argparse.Namespace) -> int:
    if args.older_than < 0:
        raise ConfigError(f"--older-than must be a number of days >= 0, got {args.older_than}")
    removed = await prune_records(records, args.older_than)
    print(f"deleted {removed:,} reply records older than {args.older_than:g} days (before "
          f"{cutoff(args.older_than):%Y-%m-%d %H:%M} UTC); the history was not touched",
          file=sys.stderr)
    return 0


_HANDLERS: dict[str, Callable[[ReplyRecords, argparse.Namespace], Awaitable[int]]] = {
    "list": _list, "show": _show, "prune": _prune,
}


def main(args: argparse.Namespace) -> int:
    """`threadline inspect ACTION`."""
    if args.action == "replay":
        return _replay(args)
    url = store_url(args)
    require_database(url)

    async def run() -> int:
        async with open_backend(url) as backend:
            if backend.records is None:
                raise ConfigError(f"backend {backend.name} keeps no reply records: there is "
                                  "nothing to inspect")
            return await _HANDLERS[args.action](backend.records, args)

    return asyncio.run(run())


def _replay(args: argparse.Namespace) -> int:
    from threadline.runtime import Runtime

    if args.config is None:
        raise ConfigError("replay needs a config (--config FILE, or ./threadline.yaml): it "
                          "answers with the agents, options and model key of that config")
    settings = load_settings(args.config)
    require_database(settings.store.url)

    async def run() -> int:
        runtime = Runtime.build(settings)  # built, never started: no channel connects
        replayer = runtime.inspector.replayer(runtime.team.agents)
        if replayer is None:
            raise ConfigError(f"backend {runtime.backend.name} keeps no reply records: there "
                              "is nothing to replay")
        async with runtime.backend:
            outcome = await replayer.replay(
                args.record, model=args.model, mode="recorded" if args.recorded else "current")
        print(format_replay(outcome))
        return 0

    return asyncio.run(run())


def console_main(args: argparse.Namespace) -> int:
    """`threadline console [CONFIG | --db PATH]`: the web console on its own."""
    from threadline.log import configure_logging
    from threadline.runtime import Runtime

    settings: Settings | None = None
    if args.db:
        url = f"sqlite:///{args.db}"
    elif args.config is not None:
        settings = load_settings(args.config)
        url = settings.store.url
    else:
        url = DEFAULT_STORE_URL
    require_database(url)
    token = settings.inspector.token if settings is not None else None
    require_safe_bind(args.host, token)
    configure_logging("info", "console")

    async def console() -> None:
        if settings is not None:
            runtime = Runtime.build(settings)  # for its store and agents (replay); not started
            backend, inspector, agents = runtime.backend, runtime.inspector, runtime.team.agents
        else:
            backend = build_backend(url)
            inspector = Inspector(store=backend.history, redactor=redactor_for(None),
                                  record=False, records=backend.records)
            agents = ()
        app = inspector.console(agents)
        if app is None:
            raise ConfigError(f"backend {backend.name} keeps no reply records: the console "
                              "has nothing to show")
        async with backend:
            runner = web.AppRunner(standalone_app(app), access_log=None)
            await runner.setup()
            try:
                port = await serve(runner, Listener(args.host, args.port, "--port", "--host"))
            except BaseException:
                await runner.cleanup()
                raise
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            print(f"threadline console: http://{args.host}:{port}{PREFIX}/ (Ctrl-C to stop)",
                  file=sys.stderr, flush=True)
            try:
                await stop.wait()
            finally:
                await runner.cleanup()

    asyncio.run(console())
    return 0
