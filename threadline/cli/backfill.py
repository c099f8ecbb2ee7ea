"""`threadline history backfill CONVERSATION`: an operator fills a conversation the history
does not know yet with what was said there before (a channel the bot was just added to, a
thread it will be asked about), as the `backfill` stage does when an agent is first addressed.

The channel is built from the config and connected only to read (`Channel.reading`): it takes
no events, so it may run beside the bot. A conversation the history already holds turns of is
refused: earlier messages stored after them would read out of order.
"""

from __future__ import annotations

import argparse

from threadline.backfill.stage import backfill
from threadline.channels.platform import ChannelContext
from threadline.channels.registry import platform_for
from threadline.config import load_settings
from threadline.errors import ConfigError
from threadline.history.model import Participant, StoredMessage, utc_now
from threadline.history.store import ConversationStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("conversation", help="conversation id, e.g. slack:T1:C1 or "
                                             "slack:T1:C1:1700000000.000100 (a thread)")
    parser.add_argument("--channel", help="the channels: entry to read it through (default: "
                                          "the only one of the conversation's platform)")
    parser.add_argument("--limit", type=int, default=50,
                        help="at most this many earlier messages (default 50)")


def _channel_name(args: argparse.Namespace, types: dict[str, str]) -> str:
    platform = str(args.conversation).partition(":")[0]
    if args.channel:
        if args.channel not in types:
            raise ConfigError(f"--channel {args.channel}: no such entry under channels: "
                              f"(there are: {', '.join(sorted(types)) or 'none'})")
        return str(args.channel)
    fitting = sorted(name for name, kind in types.items() if kind == platform)
    if len(fitting) != 1:
        raise ConfigError(f"{args.conversation}: {len(fitting)} channels: entries are of "
                          f"type {platform!r} ({', '.join(fitting) or 'none'}); name one with "
                          "--channel")
    return fitting[0]


async def backfill_conversation(store: ConversationStore, args: argparse.Namespace) -> int:
    """Read and store the conversation's earlier messages; prints how many."""
    if not args.config:
        raise ConfigError("history backfill needs --config FILE: the channel is read with "
                          "the platform credentials the config names")
    settings = load_settings(args.config)
    name = _channel_name(args, {n: c.type for n, c in settings.channels.items()})
    held = await store.count(args.conversation)
    if held:
        raise ConfigError(f"{args.conversation} already holds {held} turns: earlier messages "
                          "stored now would read after them; backfill fills a conversation "
                          "the history does not know yet")
    channel_settings = settings.channels[name]
    channel = platform_for(channel_settings.type).build(
        name, channel_settings, ChannelContext(interactive=False))
    metadata = channel.metadata_for(args.conversation)
    now = StoredMessage(
        id=f"{args.conversation}:backfill", conversation_id=args.conversation,
        participant=Participant(kind="system", id="threadline"), content="",
        timestamp=utc_now(), scope="thread" if metadata.thread_id else "channel",
        metadata=metadata)
    async with channel.reading():
        earlier = await channel.earlier_messages(now, limit=args.limit)
    stored = await backfill(store, now, earlier)
    print(f"{args.conversation}: read {len(earlier)} earlier messages through {name}, "
          f"stored {stored}", file=args.target)
    return 0
