"""`threadline config schema`: a JSON Schema of the whole config file, for editors to validate
with. Each `channels:` entry is one of the registered platforms' settings (by its `type:`), each
`providers:` entry one of the registered providers', and `store.url` one of the registered
backends' schemes; plugs installed later appear once they are registered.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pydantic import BaseModel

from threadline.agents.providers import provider_names, provider_plug
from threadline.backends.registry import backend_schemes
from threadline.channels.registry import platform_for, platform_names
from threadline.config import Settings
from threadline.errors import ConfigError

_REF = "#/$defs/{model}"


def _one_of(models: list[type[BaseModel]], defs: dict[str, Any]) -> dict[str, Any]:
    """`oneOf` the models' schemas, their definitions merged into `defs`."""
    variants = []
    for model in models:
        schema = model.model_json_schema(ref_template=_REF)
        defs.update(schema.pop("$defs", {}))
        defs[model.__name__] = schema
        variants.append({"$ref": _REF.format(model=model.__name__)})
    return {"oneOf": variants} if variants else {"type": "object"}


def _loadable(load: Any, names: list[str]) -> list[type[BaseModel]]:
    """The settings models of the plugs that load here (one whose SDK is missing is left out)."""
    models: list[type[BaseModel]] = []
    for name in names:
        try:
            models.append(load(name).settings)
        except ConfigError:
            continue
    return models


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a config file, every registered plug included."""
    schema = Settings.model_json_schema(ref_template=_REF)
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    properties = schema["properties"]
    properties.pop("base_dir", None)  # the config file's folder, never written in it
    properties["channels"] = {
        "type": "object", "description": "Chat rooms by name; `type:` names the platform.",
        "additionalProperties": _one_of(_loadable(platform_for, platform_names()), defs)}
    properties["providers"] = {
        "type": "object", "description": "More model providers by name; `type:` names one.",
        "additionalProperties": _one_of(_loadable(provider_plug, provider_names()), defs)}
    joined = defs["AgentSettings"]["properties"]["channels"]
    joined["items"] = {"anyOf": [{"type": "string"}, joined["items"]]}  # a name is enough
    schemes = "|".join(sorted(backend_schemes()))
    defs["StoreSettings"]["properties"]["url"]["pattern"] = rf"^({schemes})(\+[A-Za-z0-9_]+)?:"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Threadline configuration"
    return schema


def main(args: argparse.Namespace) -> int:
    """`threadline config schema`."""
    print(json.dumps(config_schema(), indent=2, sort_keys=True))
    return 0
