"""Which time zone "tomorrow 9:00" is read in: the person's where the platform says (Slack's
`users.info` tz), else the channel's (`scheduler.channel_timezones`), else the deployment's
(`scheduler.timezone`)."""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from threadline.channels.base import Channel
from threadline.errors import ChannelError
from threadline.history.model import StoredMessage
from threadline.schedules.timing import zone

log = structlog.get_logger("threadline.schedules")


class TimeZones:
    """Resolves a message's time zone; see the module docstring."""

    def __init__(self, default: str = "UTC", *, per_channel: Mapping[str, str] | None = None,
                 channels: Mapping[str, Channel] | None = None) -> None:
        zone(default)
        self.default = default
        self.per_channel = dict(per_channel or {})
        for name in self.per_channel.values():
            zone(name)
        self.channels: Mapping[str, Channel] = channels if channels is not None else {}

    async def of(self, message: StoredMessage, channel: str | None) -> str:
        """The time zone `message`'s author reads times in."""
        platform = self.channels.get(channel or "")
        if platform is not None:
            try:
                person = await platform.person_timezone(message)
            except ChannelError as exc:
                log.warning("schedules.timezone_unknown", conversation_id=message.conversation_id,
                            error=str(exc))
                person = None
            if person:
                return person
        return self.per_channel.get(channel or "", self.default)
