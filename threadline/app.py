"""`Threadline`: the library face, the same app `threadline run` builds, in a few lines.

    async with Threadline(agents={"ada": "You are Ada.", "bob": "You are Bob."},
                          store="sqlite:///bot.db", model="offline") as app:
        for reply in await app.say("room", "@ada @bob hello"):
            print(reply.agent_name, reply.text)

The arguments become the same `Settings` a YAML file would, and `Runtime.build` wires them:
error replies, metrics, spend limits, reply records, people, the conversation lock and the
outbox, exactly as `threadline run` does, so an embedder and the CLI run one app. Any other
section of the YAML (`spend`, `inspector`, `people`, `ops`...) is a keyword argument of the
same name. A library opens no port unless asked: `ops` is off unless given.

A library keeps quiet too: the host's stdout is the host's, so Threadline logs to stderr, and
only warnings and errors unless `log={"level": "info"}` (or `THREADLINE_LOG_LEVEL`) asks for
more: a line per turn is a service's log, not something a program embedding agents expects
to see. A host that configured structlog itself keeps its own set-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from pydantic import ValidationError

from threadline.agents.llm import ModelProvider
from threadline.backends.registry import DEFAULT_STORE_URL
from threadline.channels.local import LocalChannel, LocalReply
from threadline.config import Settings
from threadline.errors import ChannelError, ConfigError
from threadline.log import configure_library_logging
from threadline.runtime import Runtime

AgentSpec = str | Mapping[str, Any]  # a system prompt, or the agent's YAML settings
ChannelSpec = str | Mapping[str, Any]  # a platform type, or the channel's YAML settings


def _agent(spec: AgentSpec, channels: list[str]) -> dict[str, Any]:
    settings: dict[str, Any] = ({"system_prompt": spec} if isinstance(spec, str)
                                else dict(spec))
    settings.setdefault("channels", channels)  # an agent joins every channel unless told
    return settings


class Threadline:
    """Agents on channels over one store, started and stopped as an async context manager."""

    def __init__(self, *, agents: Mapping[str, AgentSpec],
                 channels: Mapping[str, ChannelSpec] | None = None,
                 store: str = DEFAULT_STORE_URL, model: str = "auto",
                 provider: ModelProvider | None = None, **sections: Any) -> None:
        rooms = {name: {"type": spec} if isinstance(spec, str) else dict(spec)
                 for name, spec in (channels or {"room": "local"}).items()}
        config: dict[str, Any] = {
            "store": {"url": store}, "model": {"provider": model}, "ops": {"enabled": False},
            **sections, "channels": rooms,
            "agents": {name: _agent(spec, list(rooms)) for name, spec in agents.items()}}
        try:
            self.settings = Settings.model_validate(config)
        except ValidationError as exc:
            raise ConfigError(f"Threadline(...) settings are not valid: {exc}") from None
        log = self.settings.log
        configure_library_logging(log.level if "log" in sections else "warning", log.format)
        # `provider` (a model of your own, or a test's) answers for every agent.
        self.runtime = Runtime.build(self.settings, provider=provider, interactive=False)

    async def __aenter__(self) -> Self:
        await self.runtime.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.runtime.stop()

    async def say(self, channel: str, text: str, *, user: str = "you") -> list[LocalReply]:
        """Say `text` in a local room as `user`; the replies once every agent has answered."""
        room = next((c for c in self.runtime.channels if c.name == channel), None)
        if not isinstance(room, LocalChannel):
            raise ChannelError(f"channel {channel!r} is not a local room of this app; say() "
                               "speaks in `type: local` channels (the others hear people)")
        message = await room.say(text, user=user)
        return [reply for reply in room.sent if reply.in_reply_to == message.id]
