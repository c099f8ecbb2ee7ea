"""Tools an agent can call: the shape every tool has, and tools made from typed async functions.

A tool everywhere in Threadline is anything with `.name`, `.description`, `.input_schema` (a
JSON schema dict) and `async run(input) -> str`; the `Tool` protocol says so, and the
conversation_search tool satisfies it without importing this module. `FunctionTool` is the
concrete kind: built by `tool` / `function_tool` from a function's signature and docstring, or
directly with an explicit schema and a handler.

Input from the model is checked before the function runs. A wrong key or type comes back as a
short error text the model can act on (the run goes on), never as an exception.
"""

from __future__ import annotations

import inspect
import json
import re
import types
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Union, get_args, get_origin, get_type_hints, overload
from typing import cast as typing_cast

from threadline.agents.llm import ToolSpec
from threadline.errors import ConfigError
from threadline.history.files import ToolFile

# What the Anthropic Messages API accepts as a tool name.
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.+)$")

Handler = Callable[..., Awaitable[Any]]


class Tool(Protocol):
    """What the agent loop needs of a tool: how the model sees it, and how to run it."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> Mapping[str, Any]: ...

    async def run(self, input: dict[str, Any]) -> str | ToolFile: ...


def to_tool_spec(tool: Tool) -> ToolSpec:
    """The model-facing description of a tool."""
    return ToolSpec(name=tool.name, description=tool.description,
                    input_schema=dict(tool.input_schema))


@dataclass(frozen=True, slots=True)
class FunctionTool:
    """A tool backed by an async handler that takes the model's input as keyword arguments.

    Build one from a typed function with `tool` / `function_tool`, or give the schema yourself:
    `FunctionTool(name=..., description=..., input_schema=..., handler=...)`. The handler's
    result becomes text: a str as it is, anything else as sorted JSON.
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.match(self.name):
            raise ConfigError(
                f"tool name {self.name!r} is not allowed: use 1-64 letters, digits, '_' or '-'"
            )
        if not self.description.strip():
            raise ConfigError(
                f"tool {self.name!r} has no description: the model needs one to know when to "
                "use it. Add a docstring or pass description=..."
            )
        if self.input_schema.get("type") != "object":
            raise ConfigError(
                f"tool {self.name!r}: input_schema must be a JSON schema with \"type\": "
                f"\"object\", got {dict(self.input_schema)!r}"
            )
        if not inspect.iscoroutinefunction(self.handler):
            raise ConfigError(
                f"tool {self.name!r}: the handler must be an async function (async def)"
            )

    async def run(self, input: dict[str, Any]) -> str | ToolFile:
        problem = input_problem(self.input_schema, input)
        if problem is not None:
            return f"Error: invalid input for tool {self.name}: {problem}. Nothing was run."
        result = await self.handler(**input)
        return result if isinstance(result, ToolFile) else result_text(result)


def result_text(result: Any) -> str:
    """A tool's return value as the text the model reads."""
    if isinstance(result, str):
        return result
    return json.dumps(result, sort_keys=True, ensure_ascii=False, default=str)


@overload
def tool(fn: Handler) -> FunctionTool: ...


@overload
def tool(
    fn: None = None, *, name: str | None = None, description: str | None = None
) -> Callable[[Handler], FunctionTool]: ...


def tool(
    fn: Handler | None = None, *, name: str | None = None, description: str | None = None
) -> FunctionTool | Callable[[Handler], FunctionTool]:
    """Decorator form of `function_tool`: `@tool` or `@tool(name=..., description=...)`."""
    if fn is None:
        return lambda f: function_tool(f, name=name, description=description)
    return function_tool(fn, name=name, description=description)


def function_tool(
    fn: Handler, *, name: str | None = None, description: str | None = None
) -> FunctionTool:
    """A tool from a typed async function: name, docstring and signature become what the model sees.

    Supported parameter types: str, int, float, bool, list[...], dict[str, ...], Literal[...]
    and `X | None`. Parameters without defaults are required.
    """
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    doc = inspect.getdoc(fn) or ""
    return FunctionTool(
        name=tool_name,
        description=description if description is not None else _first_paragraph(doc),
        input_schema=_signature_schema(fn, tool_name, _arg_descriptions(doc)),
        handler=fn,
    )


def _first_paragraph(doc: str) -> str:
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def _arg_descriptions(doc: str) -> dict[str, str]:
    """Per-parameter descriptions from a Google-style `Args:` section, if there is one."""
    found: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        if _ARGS_HEADER.match(line):
            in_args = True
            continue
        if in_args:
            match = _ARG_LINE.match(line)
            if match:
                found[match.group(1)] = match.group(2).strip()
            elif line.strip() and not line.startswith((" ", "\t")):
                in_args = False
    return found


def _signature_schema(fn: Handler, tool_name: str, described: dict[str, str]) -> dict[str, Any]:
    try:
        hints = get_type_hints(fn)
    except (NameError, TypeError) as exc:
        raise ConfigError(f"tool {tool_name!r}: cannot read its type hints ({exc})") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(fn).parameters.values():
        where = f"tool {tool_name!r}, parameter {parameter.name!r}"
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD,
                              parameter.POSITIONAL_ONLY):
            raise ConfigError(f"{where}: the model passes named values only; "
                              "use plain or keyword-only parameters")
        if parameter.name not in hints:
            raise ConfigError(f"{where} has no type hint; add one (str, int, list[str], ...)")
        schema = _type_schema(hints[parameter.name], where)
        if parameter.name in described:
            schema["description"] = described[parameter.name]
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        else:
            schema["default"] = _json_default(parameter.default, where)
        properties[parameter.name] = schema
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


def _json_default(value: Any, where: str) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: the default {value!r} is not a JSON value") from exc
    return value


def _type_schema(annotation: Any, where: str) -> dict[str, Any]:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    if origin is Literal:
        kinds = {_JSON_TYPES.get(type(a)) for a in args}
        if None in kinds or len(kinds) != 1:
            raise ConfigError(f"{where}: Literal values must all be str, int, float or bool")
        return {"type": kinds.pop(), "enum": list(args)}
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1 and len(args) == 2:
            return {"anyOf": [_type_schema(options[0], where), {"type": "null"}]}
        raise ConfigError(f"{where}: only `X | None` unions are supported, got {annotation}")
    if origin is list or annotation is list:
        item = args[0] if args else None
        return {"type": "array", "items": _type_schema(item, where)} if item else {"type": "array"}
    if origin is dict or annotation is dict:
        if args and args[0] is not str:
            raise ConfigError(f"{where}: dict keys must be str (JSON object keys)")
        schema: dict[str, Any] = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = _type_schema(args[1], where)
        return schema
    if annotation is Any:
        return {}
    raise ConfigError(f"{where}: type {annotation!r} has no JSON schema here; use str, int, "
                      "float, bool, list[...], dict[str, ...], Literal[...] or X | None")


def input_problem(schema: Mapping[str, Any], value: Any, path: str = "input") -> str | None:
    """What is wrong with a value against a (simple) JSON schema, or None if it fits.

    Covers what tool schemas use: type, enum, properties, required, additionalProperties,
    items, anyOf, minimum, maximum, minLength and pattern. Unknown keywords are not checked.
    """
    if "anyOf" in schema:
        options = typing_cast(list[Mapping[str, Any]], schema["anyOf"])
        if any(input_problem(option, value, path) is None for option in options):
            return None
        return f"{path} must be {' or '.join(_describe(o) for o in options)}, got {_shown(value)}"
    expected = schema.get("type")
    if expected is not None and not _has_type(value, expected):
        return f"{path} must be {_describe(schema)}, got {_shown(value)}"
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        return f"{path} must be one of {allowed}, got {_shown(value)}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _range_problem(schema, value, path)
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{path} must have at least {schema['minLength']} characters"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return f"{path} must match {schema['pattern']!r}, got {_shown(value)}"
    if isinstance(value, dict):
        return _object_problem(schema, value, path)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problem = input_problem(schema["items"], item, f"{path}[{index}]")
            if problem is not None:
                return problem
    return None


def _range_problem(schema: Mapping[str, Any], value: float, path: str) -> str | None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (f"from {low} to {high}" if low is not None and high is not None
                  else f"at least {low}" if low is not None else f"at most {high}")
        return f"{path} must be {bounds}, got {_shown(value)}"
    return None


def _object_problem(schema: Mapping[str, Any], value: dict[str, Any], path: str) -> str | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [key for key in schema.get("required", ()) if key not in value]
    if missing:
        return f"{path} is missing required {', '.join(repr(k) for k in missing)}"
    extra_schema = schema.get("additionalProperties", True)
    for key, item in value.items():
        where = key if path == "input" else f"{path}.{key}"
        if key in properties:
            problem = input_problem(properties[key], item, where)
        elif extra_schema is False:
            known = ", ".join(repr(k) for k in properties) or "none"
            problem = f"unknown key {key!r} (known keys: {known})"
        elif isinstance(extra_schema, Mapping):
            problem = input_problem(extra_schema, item, where)
        else:
            problem = None
        if problem is not None:
            return problem
    return None


def _has_type(value: Any, expected: str | list[str]) -> bool:
    if isinstance(expected, list):
        return any(_has_type(value, e) for e in expected)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    python_type = {"string": str, "boolean": bool, "array": list, "object": dict,
                   "null": type(None)}.get(expected)
    return python_type is None or isinstance(value, python_type)


def _describe(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type", "any value")
    if isinstance(kind, list):
        return " or ".join(_describe({"type": k}) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"an array of {_describe(schema['items'])}"
    article = "an" if str(kind)[0] in "aeiou" else "a"
    return f"{article} {kind}" if kind != "null" else "null"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 60:
        text = text[:57] + "..."
    kind = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
            dict: "object", type(None): "null"}.get(type(value), type(value).__name__)
    return f"{text} ({kind})"
