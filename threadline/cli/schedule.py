"""`threadline schedule ...`: an operator lists, adds and cancels scheduled posts.

    threadline schedule list --config threadline.yaml [--conversation slack:T1:C2] [--all]
    threadline schedule add --config threadline.yaml --channel team-slack \\
        --conversation slack:T1:C0REPORTS --when "cron 0 9 * * 1" --message "Weekly report day"
    threadline schedule cancel --config threadline.yaml 3f2a9c1b7d0e

`add` reads the config for the channel (where a conversation's posts go is the platform's
business) and its agents; times are read in `--timezone`, else the channel's, else the
config's (`scheduler.timezone`). What is added is fired by the running processes.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from threadline.backends.parts import parts_of
from threadline.channels.platform import ChannelContext
from threadline.channels.registry import platform_for
from threadline.cli.history import StoreAction, require_database, run_action, store_url
from threadline.config import Settings, load_settings
from threadline.errors import ConfigError
from threadline.history.store import ConversationStore
from threadline.schedules import Schedule, parse_when
from threadline.schedules.book import ScheduleBook as Book
from threadline.schedules.schedule import State

ACTIONS = {
    "list": "List scheduled posts, the soonest first.",
    "add": "Add a scheduled post (a message as written, or a prompt an agent answers).",
    "cancel": "Cancel a scheduled post by its id.",
}


def add_arguments(action: str, parser: argparse.ArgumentParser) -> None:
    if action == "list":
        parser.add_argument("--conversation", metavar="ID", help="only this conversation")
        parser.add_argument("--all", action="store_true",
                            help="also those done, cancelled or missed")
    elif action == "cancel":
        parser.add_argument("schedule_id", metavar="ID")
    else:
        parser.add_argument("--channel", required=True, help="the config's channel name")
        parser.add_argument("--conversation", required=True, metavar="ID",
                            help="where to post, e.g. slack:T1:C0REPORTS")
        parser.add_argument("--when", required=True,
                            help="'in 30 minutes', '2026-12-01 09:00', 'cron 0 9 * * 1'")
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--message", help="posted as written")
        what.add_argument("--prompt", help="answered by the agent then")
        parser.add_argument("--agent", help="who posts (default: the channel's first agent)")
        parser.add_argument("--timezone", help="IANA zone the time is read in")


def _book(store: ConversationStore) -> Book:
    """The schedule book kept beside the store; a `ConfigError` when its backend keeps none."""
    book = parts_of(store).schedules
    if book is None:
        raise ConfigError(f"backend {parts_of(store).name} keeps no schedules")
    return book


async def _list(store: ConversationStore, args: argparse.Namespace) -> int:
    states: tuple[State, ...] = (("active", "done", "cancelled", "missed") if args.all
                                 else ("active",))
    for schedule in await _book(store).listed(conversation_id=args.conversation,
                                                     states=states, limit=10_000):
        print(f"{schedule.state}\t{schedule.conversation_id}\t{schedule.describe()}")
    return 0


async def _cancel(store: ConversationStore, args: argparse.Namespace) -> int:
    if not await _book(store).cancel(args.schedule_id):
        raise ConfigError(f"no active schedule {args.schedule_id!r} (threadline schedule list "
                          "shows them)")
    print(f"cancelled {args.schedule_id}")
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    if args.config is None:
        raise ConfigError("schedule add needs --config FILE: the channel and its agents are "
                          "read from it")
    return load_settings(args.config)


async def _add(store: ConversationStore, args: argparse.Namespace) -> int:
    settings = _settings(args)
    entry = settings.channels.get(args.channel)
    if entry is None:
        raise ConfigError(f"--channel {args.channel!r} is not in {args.config} (channels: "
                          f"{', '.join(sorted(settings.channels))})")
    joined = [name for name, agent in settings.agents.items()
              if any(c.name == args.channel for c in agent.channels)]
    agent = args.agent or (joined[0] if joined else None)
    if agent is None or agent not in joined:
        raise ConfigError(f"--agent {agent!r} does not answer on channel {args.channel!r} "
                          f"(its agents: {', '.join(joined) or 'none'})")
    channel = platform_for(entry.type).build(args.channel, entry,
                                             ChannelContext(interactive=False))
    meta = channel.metadata_for(args.conversation)
    tz = (args.timezone or settings.scheduler.channel_timezones.get(args.channel)
          or settings.scheduler.timezone)
    try:
        timing = parse_when(args.when, now=datetime.now(UTC), tz=tz)
    except ValueError as exc:
        raise ConfigError(f"--when: {exc}") from None
    schedule = await _book(store).add(Schedule(
        conversation_id=args.conversation, agent=agent,
        kind="message" if args.message is not None else "prompt",
        text=args.message if args.message is not None else args.prompt, due_at=timing.due_at,
        cron=timing.cron, timezone=tz, created_by="operator", created_by_name="an operator",
        channel=args.channel, origin={
            "channel_type": meta.channel_type, "channel_name": meta.channel_name,
            "channel_id": meta.channel_id, "thread_id": meta.thread_id,
            "scope": "thread" if meta.thread_id else "channel"}))
    print(schedule.describe())
    return 0


_HANDLERS: dict[str, StoreAction] = {"list": _list, "add": _add, "cancel": _cancel}


def main(args: argparse.Namespace) -> int:
    """`threadline schedule ACTION`."""
    url = store_url(args)
    require_database(url)
    return run_action(url, _HANDLERS[args.action], args, target=None)
