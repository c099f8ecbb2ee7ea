"""`threadline people ...`: link a person's identities, and export or erase what is kept.

    threadline people link slack:T123:U456 telegram:456
    threadline people unlink telegram:456
    threadline people show telegram:456
    threadline people export person-1a2b3c --out alice.jsonl
    threadline people forget telegram:456 --yes

PERSON is a person id or any of its identities (an identity nobody linked is a person alone).
Export and forget walk in bounded batches and log their progress; forget writes an audit line
(counts and time, no content) and purges the outbox file too.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import IO

from threadline.backends.parts import people_for
from threadline.cli.history import StoreAction, require_database, run_action, store_url
from threadline.config import load_settings
from threadline.errors import ConfigError
from threadline.history.store import ConversationStore
from threadline.interceptors.capture import default_outbox_path
from threadline.interceptors.outbox import Outbox
from threadline.log import configure_logging
from threadline.people.erase import export_person, forget_person, resolve_person
from threadline.people.identities import parse_identity

ACTIONS = {
    "link": "Link platform identities as one person (an operator's decision; never by name).",
    "unlink": "Take one identity out of its person: it stands alone again.",
    "show": "Show a person's id and linked identities.",
    "export": "Write everything kept about a person as JSON Lines (turns, replies, summaries, "
              "reply records, inbox, deliveries, outbox).",
    "forget": "Delete everything kept about a person; keeps an audit line with counts only.",
}


def add_arguments(action: str, parser: argparse.ArgumentParser) -> None:
    if action == "link":
        parser.add_argument("identities", nargs="+", metavar="IDENTITY",
                            help="slack:TEAM:USER, telegram:USER, discord:USER, local:NAME")
        return
    if action == "unlink":
        parser.add_argument("identity", metavar="IDENTITY", help="the identity to take out")
        return
    parser.add_argument("person", metavar="PERSON", help="a person id or one of its identities")
    if action in ("export", "forget"):
        parser.add_argument("--outbox", type=Path, metavar="FILE",
                            help="the outbox file (default: the store's, or the config's)")
    if action == "export":
        parser.add_argument("--out", type=Path, metavar="FILE", help="file (default stdout)")
    if action == "forget":
        parser.add_argument("--yes", action="store_true",
                            help="do it (without --yes, only say what would be deleted)")


def _outbox(store: ConversationStore, args: argparse.Namespace) -> Outbox | None:
    if args.outbox is not None:
        return Outbox(args.outbox)
    if args.config is not None:
        configured = load_settings(args.config).store.outbox_path
        if configured:
            return Outbox(configured)
    path = default_outbox_path(store)
    return Outbox(path) if path is not None and path.exists() else None


async def _link(store: ConversationStore, args: argparse.Namespace) -> int:
    identities = [parse_identity(i) for i in args.identities]
    if len(set(identities)) < 2:
        raise ConfigError("link needs at least two different identities, e.g. "
                          "`threadline people link slack:T123:U456 telegram:456`")
    person_id = await people_for(store).link(identities, linked_by="operator")
    print(f"{person_id}\t{' '.join(identities)}")
    return 0


async def _unlink(store: ConversationStore, args: argparse.Namespace) -> int:
    identity = parse_identity(args.identity)
    if not await people_for(store).unlink(identity):
        raise ConfigError(f"{identity} is not linked to any other identity "
                          "(`threadline people show` says who is linked)")
    print(f"unlinked {identity}")
    return 0


async def _show(store: ConversationStore, args: argparse.Namespace) -> int:
    person = await resolve_person(store, args.person)
    print(f"{person.person_id}\t{' '.join(person.identities)}")
    return 0


async def _export(store: ConversationStore, args: argparse.Namespace) -> int:
    target: IO[str] = args.target
    counts = await export_person(store, args.person, target, outbox=_outbox(store, args))
    print(f"exported {_described(counts)}" + (f" to {args.out}" if args.out else ""),
          file=sys.stderr)
    return 0


async def _forget(store: ConversationStore, args: argparse.Namespace) -> int:
    person = await resolve_person(store, args.person)
    if not args.yes:
        counts = await export_person(store, args.person, args.target,
                                     outbox=_outbox(store, args))
        print(f"would delete {_described(counts)} of {person.person_id} "
              f"({' '.join(person.identities)}); run again with --yes to do it", file=sys.stderr)
        return 0
    counts = await forget_person(store, args.person, outbox=_outbox(store, args))
    print(f"forgot {person.person_id}: deleted {_described(counts)}", file=sys.stderr)
    return 0


def _described(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {name.replace('_', ' ')}" for name, n in sorted(counts.items())
                     ) or "nothing"


_HANDLERS: dict[str, StoreAction] = {
    "link": _link, "unlink": _unlink, "show": _show, "export": _export, "forget": _forget,
}


def main(args: argparse.Namespace) -> int:
    """`threadline people ACTION`."""
    url = store_url(args)
    require_database(url)
    configure_logging("info")  # export and forget report their progress in the log

    # Without --yes, forget counts what an export would write, and throws it away.
    target = (args.out if args.action == "export" else os.devnull if args.action == "forget"
              else None)
    return run_action(url, _HANDLERS[args.action], args, target=target)
