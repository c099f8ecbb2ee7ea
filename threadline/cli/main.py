"""The `threadline` command: try it, configure it, run it, check it, and manage its history.

Each sub-command lives in its own module (`history`, `check`, `init`, `inspect`, `demo`);
this one builds the parser, runs the chosen command and turns errors into exit codes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from threadline import __version__
from threadline.errors import ConfigError, ThreadlineError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

EPILOG = """\
exit codes:
  0  success
  1  runtime failure (database unreachable, a platform or the model refused, a check failed)
  2  usage or configuration error (bad option, missing or invalid config file, missing secret)

Secrets come from environment variables or a .env file beside the config, never the YAML.
THREADLINE_LOG_LEVEL and THREADLINE_LOG_FORMAT (console, json) override the log settings."""


def _store_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--db", metavar="PATH",
                       help="SQLite database file (default ./threadline.db)")
    where.add_argument("--url", metavar="URL",
                       help="database URL, e.g. postgresql+asyncpg://USER@HOST/DB")
    where.add_argument("--config", metavar="FILE", type=Path,
                       help="take the database from this config file's store.url")


def _store_actions(parser: argparse.ArgumentParser, group: ModuleType) -> None:
    """A command group's actions on a database: one sub-command per `group.ACTIONS` entry,
    with the store options, the group's own arguments (`add_arguments`) and `group.main`."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, help_text in group.ACTIONS.items():
        p = actions.add_parser(name, help=help_text, description=help_text)
        _store_options(p)
        group.add_arguments(name, p)
        p.set_defaults(handler=group.main)


def build_parser() -> argparse.ArgumentParser:
    import threadline.cli.check as cli_check
    import threadline.cli.history as cli_history
    import threadline.cli.init as cli_init
    import threadline.cli.inspect as cli_inspect
    import threadline.cli.people as cli_people
    import threadline.cli.schedule as cli_schedule
    import threadline.cli.schema as cli_schema
    import threadline.demo as demo
    from threadline.channels.registry import platform_names

    parser = argparse.ArgumentParser(
        prog="threadline", description="LLM agents as bots in Slack, Telegram and Discord, "
        "sharing one persistent conversation history.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"threadline {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help_text, description=help_text, epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)

    p = command("demo", "Offline demo: two agents sharing one remembered conversation "
                        "in this terminal (nothing to configure).")
    p.add_argument("--script", type=Path, metavar="FILE",
                   help="read one user message per line from FILE (or - for stdin), print "
                        "every reply and what each agent saw, then exit")
    p.add_argument("--db", type=Path, default=Path("threadline.db"), metavar="PATH",
                   help="SQLite file the demo remembers in (default ./threadline.db)")
    p.set_defaults(handler=demo.main)

    p = command("init", "Write a commented starter config file.")
    p.add_argument("path", nargs="?", type=Path, default=Path("threadline.yaml"),
                   help="where to write it (default threadline.yaml)")
    p.add_argument("--platform", choices=platform_names(),
                   help="add a channel for this platform (default: the local channel only)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(handler=cli_init.main)

    p = command("run", "Start every configured channel and agent; stop cleanly on "
                       "SIGTERM or SIGINT.")
    p.add_argument("config", type=Path, help="the YAML config file")
    p.add_argument("--no-input", action="store_true",
                   help="do not read standard input into local channels (for services; the "
                        "same as stdin: false on each)")
    p.set_defaults(handler=run_main)

    p = command("check", "Validate a config and test every connection (database, platform "
                         "tokens, model key); one line per problem.")
    p.add_argument("config", type=Path, help="the YAML config file")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per connection check")
    p.set_defaults(handler=cli_check.main)

    _store_actions(command("history", "List, show, search, export, import and prune stored "
                                      "conversations."), cli_history)
    _store_actions(command("people", "Link a person's identities across platforms; export "
                                     "or forget everything kept about a person."), cli_people)
    _store_actions(command("schedule", "List, add and cancel scheduled posts (reminders, "
                                       "recurring messages and prompts)."), cli_schedule)
    _store_actions(command("inspect", "What each agent saw for each reply: list, show, replay "
                                      "and prune reply records."), cli_inspect)

    p = command("console", "Serve the web console of reply records (conversations, what each "
                           "agent saw, charts, replay) on its own.")
    cli_inspect.add_console_arguments(p)
    p.set_defaults(handler=cli_inspect.console_main)

    config = command("config", "Describe the config file.")
    config_actions = config.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = config_actions.add_parser(
        "schema", help="print the JSON Schema of the config file",
        description="Print the JSON Schema of the whole config file, every registered "
                    "platform, provider and backend included (editors validate with it).")
    p.set_defaults(handler=cli_schema.main)

    db = command("db", "Database maintenance.")
    db_actions = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = db_actions.add_parser("upgrade", help="create or upgrade the schema to this version",
                              description="Create or upgrade the database schema (run the "
                                          "migrations); safe to run on a current database.")
    _store_options(p)
    p.set_defaults(handler=cli_history.upgrade_main)
    return parser


def run_main(args: argparse.Namespace) -> int:
    """`threadline run CONFIG`."""
    from threadline.agents.providers import default_plug
    from threadline.config import load_settings
    from threadline.log import configure_logging
    from threadline.provider_setup import offline_by_default
    from threadline.runtime import Runtime

    settings = load_settings(args.config)
    configure_logging(settings.log.level, settings.log.format)
    if offline_by_default(settings):
        print(f"threadline: no {default_plug().key_variable} set: agents answer with the "
              "offline model (canned, for trying things out)", file=sys.stderr)

    async def serve() -> None:
        runtime = Runtime.build(settings, interactive=not args.no_input)
        runtime.install_signal_handlers()
        try:
            await runtime.start()
            print(f"threadline: running {len(runtime.channels)} channel(s); "
                  "stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)
            await runtime.wait()
        finally:
            await runtime.stop()

    asyncio.run(serve())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    from threadline.log import configure_logging

    parser = build_parser()
    args = parser.parse_args(argv)
    # Quiet by default: stdout is the command's output; `run` reconfigures from its settings.
    configure_logging("warning")
    try:
        code: int = args.handler(args)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except ThreadlineError as exc:
        _error(str(exc))
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_FAILURE
    return code


def _error(message: str) -> None:
    for line in message.splitlines() or [""]:
        print(f"threadline: error: {line}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
