"""Which config file a command works from, the same way for every command.

`--config FILE` is accepted by every command that reads a config; `run`, `check` and `console`
also take the file as their first argument, as they always have. When neither is given,
`./threadline.yaml` is used if it exists (what `threadline init` writes), and otherwise the
built-in default (SQLite at `./threadline.db`, the local channel, the offline model unless a
key is set). `--db` or `--url`, where a command has them, say the database directly and so no
config file is looked for.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from threadline.errors import ConfigError

if TYPE_CHECKING:
    from threadline.config import Settings

DEFAULT_CONFIG = Path("threadline.yaml")
_CONFIG_SUFFIXES = (".yaml", ".yml")


def add_config_option(parser: argparse.ArgumentParser, *, positional: bool = False) -> None:
    """`--config FILE` (and, with `positional`, an optional `CONFIG` argument too)."""
    if positional:
        parser.add_argument("config_file", nargs="?", type=Path, metavar="CONFIG",
                            help=f"the YAML config file (default ./{DEFAULT_CONFIG} if it "
                                 "exists, else the built-in default)")
    parser.add_argument("--config", metavar="FILE", type=Path,
                        help=f"the YAML config file (default ./{DEFAULT_CONFIG} if it exists)")


def choose_config(args: argparse.Namespace) -> None:
    """Settle `args.config` for the chosen command: the file given (as `--config` or as the
    first argument), else `./threadline.yaml` when it exists, else None.

    A conversation argument that is a YAML file name is a config given in the wrong place:
    `inspect list threadline.yaml` lists that config's records instead of reading the name
    as a conversation id, and other actions say where the file goes.
    """
    if not hasattr(args, "config"):
        return  # the command reads no config (demo, init)
    given = getattr(args, "config_file", None)
    if given is not None:
        if args.config is not None and args.config != given:
            raise ConfigError(f"two config files given ({given} and --config {args.config}); "
                              "pass one")
        args.config = given
    conversation = getattr(args, "conversation", None)
    if isinstance(conversation, str) and conversation.endswith(_CONFIG_SUFFIXES):
        if args.config is not None or getattr(args, "action", None) != "list":
            raise ConfigError(f"{conversation!r} is a config file, not a conversation id; pass "
                              f"it as --config {conversation} and name the conversation (ids "
                              "look like slack:T1:C1, telegram:42, local:main)")
        args.config, args.conversation = Path(conversation), None
    if args.config is None and not getattr(args, "db", None) and not getattr(args, "url", None) \
            and DEFAULT_CONFIG.is_file():
        args.config = DEFAULT_CONFIG


def settings_for(args: argparse.Namespace) -> Settings:
    """The settings of the chosen config, or the built-in default (said on stderr) without
    one."""
    from threadline.config import default_settings, load_settings
    from threadline.features import feature_settings

    if args.config is not None:
        settings = load_settings(args.config)
        feature_settings(settings)  # each feature's section, by its own model
        return settings
    print(f"threadline: no ./{DEFAULT_CONFIG}: using the built-in default (SQLite "
          f"./threadline.db, the local channel); `threadline init` writes a config to edit",
          file=sys.stderr)
    return default_settings()
