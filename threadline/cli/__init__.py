"""The `threadline` command, one module per command group (`main` builds the parser)."""

from threadline.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
