"""`threadline init`: a commented starter config, optionally with one platform's channel."""

from __future__ import annotations

import argparse
import sys

from threadline.errors import ConfigError

HEADER = """\
# Threadline configuration. Check it with `threadline check {path}`, start with
# `threadline run {path}`. Secrets are never written here: use ${{VARIABLE}} and set the
# variable in the environment or in a .env file beside this file.

store:
  # SQLite file (relative to where threadline runs). For several replicas use PostgreSQL:
  # url: postgresql+asyncpg://threadline@db.internal/threadline
  url: sqlite+aiosqlite:///threadline.db

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
  #   anthropic/claude-sonnet-4-5: {{input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}}

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

channels:
  local:
    type: local        # in-process room, for trying agents out
    # auto: when `threadline run` is started in a terminal, type messages there and read the
    # replies. false for services (or `threadline run --no-input`); true reads piped input too.
    stdin: auto
"""

CHANNELS = {
    "slack": """\
  slack:
    type: slack
    # http: Slack posts events to host:port/path (scales to several replicas behind a
    # load balancer). socket: one outbound Socket Mode connection (one replica per app).
    mode: http
    bot_token: ${SLACK_BOT_TOKEN}            # xoxb-..., OAuth & Permissions
    signing_secret: ${SLACK_SIGNING_SECRET}  # Basic Information > App Credentials
    # app_token: ${SLACK_APP_TOKEN}          # xapp-..., only for mode: socket
    host: 0.0.0.0
    port: 3000
    path: /slack/events
    reply_in_thread: true
    streaming: true      # replies appear as they are written (false: posted once, whole)
""",
    "telegram": """\
  telegram:
    type: telegram
    # polling: one long-polling connection per bot token (one replica).
    # webhook: Telegram posts to webhook_url (scales out behind a load balancer).
    mode: polling
    token: ${TELEGRAM_BOT_TOKEN}             # from @BotFather
    # webhook_url: https://bots.example.invalid/telegram
    # webhook_secret_token: ${TELEGRAM_WEBHOOK_SECRET}
    # webhook_listen: 0.0.0.0
    # webhook_port: 8443
    streaming: true      # drafts in private chats, edits in groups, as the reply is written
    stream_interval: 1   # seconds between changes in one chat (Telegram allows ~1/s)
""",
    "discord": """\
  discord:
    type: discord
    # One gateway connection per bot token (or per shard): one replica per token.
    # Enable "Message Content Intent" for the bot in the Developer Portal.
    token: ${DISCORD_BOT_TOKEN}
    streaming: true      # one message edited as the reply is written
""",
}

AGENTS = """\

agents:
  support:
    description: Answers product questions and remembers each customer.
    system_prompt: |
      You are the support assistant. Answer briefly and say when you are not sure.
    # system_prompt_file: prompts/support.md   # instead of system_prompt
    model: claude-sonnet-4-5
    # Tools by reference, "module:function" (modules beside this file are found first).
    tools: []
    aliases: [help]
    memory:
      token_budget: 3000           # tokens of history in each prompt
      addressed_only_mode: true    # see only turns addressed to or written by this agent
      rolling_summary_threshold: 40
      recall: true                 # search older turns for what the new message asks about
    channels:
      - local
{joined}"""


def render(platform: str | None, path: str) -> str:
    """The starter config text for `platform` (None: the local channel only)."""
    text = HEADER.format(path=path) + (CHANNELS[platform] if platform else "")
    joined = f"      - name: {platform}\n        respond_to_all: false\n" if platform else ""
    return text + AGENTS.format(joined=joined)


def main(args: argparse.Namespace) -> int:
    """`threadline init [--platform P] [PATH]`."""
    if args.path.exists() and not args.force:
        raise ConfigError(f"{args.path} already exists; pass --force to overwrite it or give "
                          "another path")
    if not args.path.parent.exists():
        raise ConfigError(f"the folder {str(args.path.parent)!r} does not exist")
    args.path.write_text(render(args.platform, str(args.path)), encoding="utf-8")
    print(f"wrote {args.path}; next: `threadline check {args.path}`", file=sys.stderr)
    return 0
