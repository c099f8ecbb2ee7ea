"""A model provider that lives outside threadline, as a third-party package's would: it answers
each turn with the newest user text in capitals, behind a prefix its settings choose.

It registers through the `threadline.providers` entry point group (`registered_in`), so the
config, the runtime and the CLI find it by the name the YAML gives, without naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from tests.cli.helpers import entry_point_package
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.agents.providers import ProviderPlug, ProviderSettings

NAME = "shouting"


class ShoutingSettings(ProviderSettings):
    type: Literal["shouting"] = "shouting"
    prefix: str = "HEARD:"


class ShoutingModel:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def complete(self, request: ModelRequest) -> ModelResponse:
        said = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        return ModelResponse(text=f"{self.prefix} {said.splitlines()[-1].upper()} "
                                  f"({request.model})")


def _build(settings: ShoutingSettings) -> ShoutingModel:
    return ShoutingModel(settings.prefix)


async def _check(settings: ShoutingSettings) -> str:
    return f"shouting with {settings.prefix!r}"


PLUG = ProviderPlug(name=NAME, settings=ShoutingSettings, build=_build, check=_check,
                    default_model="shout-1")


def registered_in(site: Path) -> Path:
    """A distribution in `site` (a folder to put on the path) that registers this provider."""
    return entry_point_package(site, distribution="threadline-shouting",
                               group="threadline.providers", name=NAME, value=f"{__name__}:PLUG")
