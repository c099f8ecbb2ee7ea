"""The `threadline` command: try it, configure it, run it, check it, and manage its history.

Each sub-command lives in its own module (`history`, `check`, `init`, `inspect`, `demo`);
this one builds the parser, runs the chosen command and turns errors into exit codes.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from threadline import __version__
from threadline.cli.config_file import (
    DEFAULT_CONFIG,
    add_config_option,
    choose_config,
    settings_for,
)
from threadline.cli.invoked import command
from threadline.errors import ConfigError, ThreadlineError

if TYPE_CHECKING:
    from threadline.config import Settings

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
                       help="SQLite database file (default: ./threadline.yaml's, else "
                            "./threadline.db)")
    where.add_argument("--url", metavar="URL",
                       help="database URL, e.g. postgresql+asyncpg://USER@HOST/DB")
    add_config_option(parser)


def _store_actions(parser: argparse.ArgumentParser, group: ModuleType) -> None:
    """A command group's actions on a database: one sub-command per `group.ACTIONS` entry,
    with the store options, the group's own arguments (`add_arguments`) and `group.main`."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, help_text in group.ACTIONS.items():
        p = actions.add_parser(name, help=help_text, description=help_text)
        _store_options(p)
        group.add_arguments(name, p)
        p.set_defaults(handler=group.main)


# Each command's arguments, added only when the command is chosen: its module (and the SDKs
# it imports) loads then, so `threadline --version` and `--help` start at once.

def _demo(p: argparse.ArgumentParser) -> None:
    import threadline.demo as demo

    p.add_argument("--script", type=Path, metavar="FILE",
                   help="read one user message per line from FILE (or - for stdin), print "
                        "every reply and what each agent saw, then exit")
    p.add_argument("--db", type=Path, default=Path("threadline.db"), metavar="PATH",
                   help="SQLite file the demo remembers in (default ./threadline.db)")
    p.add_argument("--web", action="store_true",
                   help="chat with the agents in the website chat widget on 127.0.0.1 "
                        "instead of this terminal (until Ctrl-C)")
    p.set_defaults(handler=demo.main, invoked_as=command())


def _init(p: argparse.ArgumentParser) -> None:
    import threadline.cli.init as cli_init
    from threadline.channels.registry import platform_names

    p.add_argument("path", nargs="?", type=Path, default=DEFAULT_CONFIG,
                   help=f"where to write it (default {DEFAULT_CONFIG})")
    p.add_argument("--platform", choices=platform_names(),
                   help="add a channel for this platform (default: the local channel only)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(handler=cli_init.main)


def _run(p: argparse.ArgumentParser) -> None:
    add_config_option(p, positional=True)
    p.add_argument("--no-input", action="store_true",
                   help="do not read standard input into local channels (for services; the "
                        "same as stdin: false on each)")
    p.set_defaults(handler=run_main)


def _check(p: argparse.ArgumentParser) -> None:
    import threadline.cli.check as cli_check

    add_config_option(p, positional=True)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per connection check")
    p.set_defaults(handler=cli_check.main)


def _history(p: argparse.ArgumentParser) -> None:
    import threadline.cli.history as cli_history

    _store_actions(p, cli_history)


def _people(p: argparse.ArgumentParser) -> None:
    import threadline.cli.people as cli_people

    _store_actions(p, cli_people)


def _schedule(p: argparse.ArgumentParser) -> None:
    import threadline.cli.schedule as cli_schedule

    _store_actions(p, cli_schedule)


def _knowledge(p: argparse.ArgumentParser) -> None:
    import threadline.cli.knowledge as cli_knowledge

    _store_actions(p, cli_knowledge)


def _inspect(p: argparse.ArgumentParser) -> None:
    import threadline.cli.inspect as cli_inspect

    _store_actions(p, cli_inspect)


def _console(p: argparse.ArgumentParser) -> None:
    import threadline.cli.inspect as cli_inspect

    add_config_option(p, positional=True)
    cli_inspect.add_console_arguments(p)
    p.set_defaults(handler=cli_inspect.console_main)


def _eval(p: argparse.ArgumentParser) -> None:
    import threadline.cli.eval as cli_eval

    cli_eval.add_arguments(p)
    p.set_defaults(handler=cli_eval.main)


def _config(p: argparse.ArgumentParser) -> None:
    import threadline.cli.schema as cli_schema

    config_actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    schema = config_actions.add_parser(
        "schema", help="print the JSON Schema of the config file",
        description="Print the JSON Schema of the whole config file, every registered "
                    "platform, provider and backend included (editors validate with it).")
    schema.set_defaults(handler=cli_schema.main)


def _db(p: argparse.ArgumentParser) -> None:
    import threadline.cli.history as cli_history

    db_actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    upgrade = db_actions.add_parser(
        "upgrade", help="create or upgrade the schema to this version",
        description="Create or upgrade the database schema (run the migrations); safe to run "
                    "on a current database.")
    _store_options(upgrade)
    upgrade.set_defaults(handler=cli_history.upgrade_main)


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "demo": ("Offline demo: two agents sharing one remembered conversation in this terminal "
             "(nothing to configure).", _demo),
    "init": ("Write a commented starter config file.", _init),
    "run": ("Start every configured channel and agent; stop cleanly on SIGTERM or SIGINT.",
            _run),
    "check": ("Validate a config and test every connection (database, platform tokens, model "
              "key, the ports it will listen on); one line per problem.", _check),
    "history": ("List, show, search, export, import and prune stored conversations.",
                _history),
    "people": ("Link a person's identities across platforms; export or forget everything "
               "kept about a person.", _people),
    "schedule": ("List, add and cancel scheduled posts (reminders, recurring messages and "
                 "prompts).", _schedule),
    "knowledge": ("Sync the documents agents answer from into the store.", _knowledge),
    "inspect": ("What each agent saw for each reply: list, show, replay and prune reply "
                "records.", _inspect),
    "console": ("Serve the web console of reply records (conversations, what each agent saw, "
                "charts, replay) on its own.", _console),
    "eval": ("Run YAML cases against a config (or two, side by side) and check the replies; "
             "capture a recorded reply as a case.", _eval),
    "config": ("Describe the config file (its JSON Schema).", _config),
    "db": ("Database maintenance.", _db),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only`, just that command's arguments are added (and its
    module imported): the others are listed by name and help text."""
    parser = argparse.ArgumentParser(
        prog="threadline", description="LLM agents as bots in Slack, Telegram and Discord, "
        "sharing one persistent conversation history.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"threadline {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, configure) in COMMANDS.items():
        p = commands.add_parser(name, help=help_text, description=help_text, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
        if only is None or only == name:
            configure(p)
    return parser


def _chosen_command(argv: Sequence[str]) -> str:
    """The command named on the line (its first word that is not an option), or "" for none
    (`--version`, `--help`)."""
    return next((word for word in argv if not word.startswith("-")), "")


def _unknown_command(word: str) -> str:
    """What to say of a command that does not exist: the nearest one, as config keys get."""
    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.5)
    hint = f"did you mean `{command()} {close[0]}`?" if close else (
        f"the commands are {', '.join(COMMANDS)}")
    return f"no command {word!r}; {hint} (`{command()} --help` says what each does)"


def run_main(args: argparse.Namespace) -> int:
    """`threadline run CONFIG`."""
    import asyncio

    from threadline.agents.providers import default_plug
    from threadline.log import configure_logging
    from threadline.provider_setup import offline_by_default
    from threadline.runtime import Runtime

    settings = settings_for(args)
    configure_logging(settings.log.level, settings.log.format)
    if offline_by_default(settings):
        print(f"threadline: no {default_plug().key_variable} set: agents answer with the "
              "offline model (canned, for trying things out)", file=sys.stderr)

    async def serve() -> None:
        runtime = Runtime.build(settings, interactive=not args.no_input)
        with ExitStack() as log_file:
            if any(channel.reads_terminal for channel in runtime.channels):
                _logs_off_the_terminal(settings, log_file)
            runtime.install_signal_handlers()
            try:
                if not await runtime.start_unless_stopped():
                    return
                print(f"threadline: running {len(runtime.channels)} channel(s); "
                      "stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)
                if runtime.console_url:
                    print("threadline: what each agent saw, reply by reply: "
                          f"{runtime.console_url}", file=sys.stderr, flush=True)
                await runtime.wait()
            finally:
                await runtime.stop()

    asyncio.run(serve())
    return EXIT_OK


def _logs_off_the_terminal(settings: Settings, log_file: ExitStack) -> None:
    """While a person chats in this terminal, log lines below warning would interleave with
    the conversation: they go to `threadline.log` beside the config instead (said once)."""
    from threadline.log import LEVELS, chosen_level, configure_logging

    level = chosen_level(settings.log.level)
    if LEVELS[level] >= LEVELS["warning"]:
        return
    path = settings.base_dir / "threadline.log"
    stream = log_file.enter_context(open(path, "a", encoding="utf-8"))  # noqa: SIM115
    configure_logging(level, settings.log.format, stream=stream)
    print(f"threadline: {level} logs go to {path} while you chat here", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = _chosen_command(argv)
    if chosen and chosen not in COMMANDS:
        _error(_unknown_command(chosen))
        return EXIT_USAGE
    args = build_parser(chosen).parse_args(argv)
    from threadline.log import configure_logging

    # Quiet by default: stdout is the command's output; `run` reconfigures from its settings.
    configure_logging("warning")
    try:
        choose_config(args)
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
