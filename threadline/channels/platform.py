"""What a chat platform hands the core: its settings model, how to build its channel, and the
starter config `threadline init` writes for it.

    PLATFORM = Platform(name="slack", settings=SlackSettings, build=build,
                        starter=STARTER)

A platform module owns everything about its platform; the core (config, runtime, CLI) looks
platforms up by the `type:` of each `channels:` entry (`threadline.channels.registry`) and never
names one. Checking a channel is the channel's own `check()`, which works before `start()`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from threadline.channels.base import Channel
from threadline.channels.delivery_status import DeliveryStatuses
from threadline.channels.shard_leases import ShardLeases
from threadline.commands.registry import Command
from threadline.history.store import ConversationStore


class ChannelSettings(BaseModel):
    """The settings every `channels:` entry has; each platform's model adds its own fields.

    `type` names the platform (a platform's model narrows it to a `Literal` of its name).
    `secret_fields` are the settings that hold credentials: the config refuses them written
    literally (they must be `${VARIABLE}`) and reply records never show their values.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    secret_fields: ClassVar[frozenset[str]] = frozenset()

    type: str
    """The platform: local, slack, telegram, discord, or a plugged-in one."""
    allow_bots: bool = False
    """Answer messages written by other bots too (off: agents never answer bots, which avoids
    loops)."""

    def problems(self) -> list[str]:
        """Settings that are each valid but do not work together, as what to set instead."""
        return []

    @property
    def needs_backend(self) -> bool:
        """Whether the channel is built on what the backend keeps for its platform
        (`ChannelContext.platform_part`), so `threadline check` opens the store first."""
        return False


class LiveReplySettings(ChannelSettings):
    """The settings of a platform that shows replies as they are written (`LiveReply`):
    `streaming: false` posts each reply once, whole; `stream_interval` is the least time in
    seconds between two changes of one chat."""

    streaming: bool = True
    """Show replies as they are written (false: each reply is posted once, whole)."""
    stream_interval: float = Field(default=1.0, gt=0)
    """The least time in seconds between two changes of one chat while a reply is written."""


def _never_stop() -> None:
    """The default `request_stop`: a channel built outside a runtime has nothing to stop."""


@dataclass(frozen=True, slots=True)
class ChannelContext:
    """What the runtime offers a channel it builds, beyond the channel's own settings.

    `interactive` is False when this process may not read its terminal (`run --no-input`,
    `threadline check`); `request_stop` asks the runtime to shut down (a terminal room whose
    input ended); `agents` are the agents that joined the channel, for a greeting;
    `platform_part` is what the backend keeps for the platform; `shard_leases` are the
    backend's, through which replicas share a gateway's shards (None: the backend keeps none,
    or no backend is open, as in `threadline check`).
    """

    agents: tuple[str, ...] = ()
    interactive: bool = True
    request_stop: Callable[[], None] = _never_stop
    # What the backend keeps for this platform (`Backend.platform_parts[type]`), for example
    # a Slack app's installations in many workspaces; None: the backend keeps nothing for it.
    platform_part: object | None = None
    shard_leases: ShardLeases | None = None
    # The agents here that may notify a whole channel (`agents.NAME.broadcast`).
    broadcasters: frozenset[str] = frozenset()
    # The conversation history, for a channel whose people read their transcript from it
    # (the web widget); None: no backend is open, as in `threadline check`.
    history: ConversationStore | None = None
    # Where a channel keeps what became of a posted reply (WhatsApp's status callbacks): the
    # backend's reply records; None: the backend keeps none, or none is open.
    delivery_statuses: DeliveryStatuses | None = None


SettingsT = TypeVar("SettingsT", bound=ChannelSettings)


def _no_setup_files(commands: Iterable[Command]) -> dict[str, str]:
    """The default `setup_files`: a platform set up by hand needs none."""
    return {}


@dataclass(frozen=True, slots=True)
class Platform(Generic[SettingsT]):
    """One chat platform: the `type:` its channels have, its settings, its channel factory.

    `starter` is the YAML `threadline init --platform NAME` adds under `channels:` (indented by
    two spaces, commented, with every setting a user needs to point it at a proxy or a local
    server); it must load as written once its `${VARIABLES}` are set. `setup_files(commands)`
    gives the files `init` writes beside the config, by name, for a team answering `commands`
    (Slack's app manifest declares them).
    """

    name: str
    settings: type[SettingsT]
    build: Callable[[str, SettingsT, ChannelContext], Channel]
    starter: str
    setup_files: Callable[[Iterable[Command]], dict[str, str]] = _no_setup_files
