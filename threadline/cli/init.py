"""`threadline init`: a commented starter config, optionally with one platform's channel
(whose entry the platform writes: `Platform.starter`)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from threadline.agents.providers import default_plug
from threadline.channels.registry import DEFAULT_PLATFORM, platform_for
from threadline.cli.config_file import DEFAULT_CONFIG
from threadline.cli.invoked import command
from threadline.commands.registry import Command
from threadline.errors import ConfigError

HEADER = """\
# Threadline configuration. Check it with `threadline check {path}`, start with
# `threadline run {path}`; every key is described in docs/config.md. Secrets are never
# written here: use ${{VARIABLE}} and set the variable in the environment or in a .env file
# beside this file.

store:
  # SQLite file (relative to where threadline runs). For several replicas use PostgreSQL:
  # url: postgresql+asyncpg://threadline@db.internal/threadline
  url: sqlite:///threadline.db

model:
  # auto: Anthropic when ANTHROPIC_API_KEY is set, otherwise the offline model (canned answers).
  # Or anthropic, offline, or openai: any OpenAI-compatible server (OpenAI, Ollama, vLLM,
  # llama.cpp, LM Studio, OpenRouter) at base_url; api_key: ${{OPENAI_API_KEY}} if it needs one.
  provider: auto
  # base_url: http://127.0.0.1:11434/v1
  max_tokens: 1024
  max_retries: 4       # rate limits and server errors are retried this often, with backoff

# More providers by name, for agents on another model (agents.NAME.provider: local):
# providers:
#   local:
#     type: openai
#     base_url: http://127.0.0.1:11434/v1
#     model: llama3.1

spend:
  timezone: UTC        # daily budgets reset at midnight here
  # Tokens a day (input, cache and output); a turn past one gets a reply saying when it resets.
  # per_agent_daily_tokens: 2000000
  # per_conversation_daily_tokens: 200000
  # per_person_daily_tokens: 50000
  # agent_daily_tokens: {{support: 5000000}}    # an agent's own cap instead of per_agent
  # US dollars per million tokens, for the estimated cost in /metrics and `threadline check`
  # (no prices are built in): "provider/model" or "model".
  # prices:
  #   anthropic/claude-sonnet-4-6: {{input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}}

log:
  # debug, info, warning, error. info logs a line per turn: use it for services; warning keeps
  # a conversation in the terminal readable.
  level: warning
  format: auto         # console in a terminal, json otherwise

ops:
  # /healthz, /readyz and Prometheus /metrics
  enabled: true
  host: 127.0.0.1
  port: 9108

inspector:
  # A record of what each agent saw for every reply; the console at http://HOST:PORT/console/
  records: true
  retention_days: 30   # null keeps records forever
  console: true        # beyond 127.0.0.1 it needs token: ${{THREADLINE_CONSOLE_TOKEN}}

# OpenTelemetry traces of every turn to your tracing tool over OTLP/HTTP (the tracing extra;
# docs/tracing.md), or set OTEL_TRACES_EXPORTER=otlp and OTEL_EXPORTER_OTLP_ENDPOINT instead.
# tracing:
#   enabled: true
#   endpoint: http://127.0.0.1:4318
#   trace_url: https://tempo.example/trace/{{trace_id}}   # the console links each reply there

channels:
"""

AGENTS = """\

agents:
  support:
    description: Answers product questions and remembers each customer.
    system_prompt: |
      You are the support assistant. Answer briefly and say when you are not sure.
    # system_prompt_file: prompts/support.md   # instead of system_prompt
    model: {model}
    # Tools by reference, "module:function" (modules beside this file are found first).
    tools: []
    aliases: [help]
    memory:
      token_budget: 3000           # tokens of history in each prompt
      addressed_only_mode: true    # see only turns addressed to or written by this agent
      rolling_summary_threshold: 40
      recall: true                 # search older turns for what the new message asks about
    channels:
      - {default}
{joined}"""


def render(platform: str | None, path: str) -> str:
    """The starter config text for `platform` (None: the default channel only); each
    platform writes its own `channels:` entry."""
    text = HEADER.format(path=path) + platform_for(DEFAULT_PLATFORM).starter
    if platform is not None and platform != DEFAULT_PLATFORM:
        text += platform_for(platform).starter
        joined = f"      - name: {platform}\n        respond_to_all: false\n"
    else:
        joined = ""
    return text + AGENTS.format(default=DEFAULT_PLATFORM, model=default_plug().default_model,
                               joined=joined)


def offered_commands(text: str, path: Path) -> list[Command]:
    """The commands `threadline run` of this config text answers: the registry the runtime
    builds for it (`/human` with handoff on, `/remind` with the scheduler, `/link` with link
    codes...), for a platform that declares its commands ahead of time (Slack's manifest).
    Its `${VARIABLES}` need no values for that: each stands in as its own name."""
    from threadline.config import load_config_text
    from threadline.runtime import Runtime

    stand_ins = {name: name for name in re.findall(r"\$\{(\w+)\}", text)}
    settings = load_config_text(text, path, env=stand_ins)
    return list(Runtime.build(settings, interactive=False).team.pipeline.commands)


def main(args: argparse.Namespace) -> int:
    """`threadline init [--platform P] [PATH]`: the config, and the platform's set-up files
    beside it (Slack's app manifest)."""
    text = render(args.platform, str(args.path))
    extra = (platform_for(args.platform).setup_files(offered_commands(text, args.path))
             if args.platform else {})
    targets = [args.path, *(args.path.parent / name for name in extra)]
    if not args.force:
        for target in targets:
            if target.exists():
                raise ConfigError(f"{target} already exists; pass --force to overwrite it or "
                                  "give another path")
    if not args.path.parent.exists():
        raise ConfigError(f"the folder {str(args.path.parent)!r} does not exist")
    args.path.write_text(text, encoding="utf-8")
    print(f"wrote {args.path}", file=sys.stderr)
    for name, text in extra.items():
        (args.path.parent / name).write_text(text, encoding="utf-8")
        print(f"wrote {args.path.parent / name}", file=sys.stderr)
    guide = f"; set-up guide: docs/platforms/{args.platform}.md" if args.platform else ""
    where = "" if args.path == DEFAULT_CONFIG else f" {args.path}"
    print(f"next: `{command()} check{where}`{guide}", file=sys.stderr)
    return 0
