"""Tools from typed async functions: the schema the model sees and how bad input is answered."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest

from threadline.agents.llm import ToolSpec
from threadline.agents.tools import FunctionTool, Tool, function_tool, to_tool_spec, tool
from threadline.errors import ConfigError


@tool
async def lookup_order(order_id: str, include_items: bool = False, limit: int | None = 5) -> dict:
    """Look up one order by its number.

    Returns the order status. Use when a user asks where an order is.

    Args:
        order_id: The order number as the user wrote it, e.g. "A-1042".
        include_items: Whether to list the order's items too.
    """
    return {"order_id": order_id, "status": "shipped", "items": ["mug"] if include_items else [],
            "limit": limit}


async def book_room(
    room: Literal["north", "south"], people: list[str], hours: float, note: str = ""
) -> str:
    """Book a meeting room."""
    return f"booked {room} for {', '.join(people)} ({hours} h){' - ' + note if note else ''}"


def test_schema_is_derived_from_the_signature_and_docstring() -> None:
    assert lookup_order.name == "lookup_order"
    assert lookup_order.description == "Look up one order by its number."
    assert lookup_order.input_schema == {
        "type": "object",
        "properties": {
            "order_id": {"type": "string",
                         "description": 'The order number as the user wrote it, e.g. "A-1042".'},
            "include_items": {"type": "boolean", "default": False,
                              "description": "Whether to list the order's items too."},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
        },
        "required": ["order_id"],
        "additionalProperties": False,
    }
    booking = function_tool(book_room, name="rooms", description="Reserve a room.")
    assert booking.name == "rooms" and booking.description == "Reserve a room."
    properties = booking.input_schema["properties"]
    assert properties["room"] == {"type": "string", "enum": ["north", "south"]}
    assert properties["people"] == {"type": "array", "items": {"type": "string"}}
    assert properties["hours"] == {"type": "number"}
    assert booking.input_schema["required"] == ["room", "people", "hours"]


def test_function_tools_and_foreign_tools_share_one_shape() -> None:
    class Echo:
        name = "echo"
        description = "Say it back."
        input_schema: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012 - the Tool protocol reads it as an attribute

        async def run(self, input: dict[str, Any]) -> str:
            return json.dumps(input)

    specs = [to_tool_spec(t) for t in (lookup_order, Echo())]
    assert specs[0] == ToolSpec("lookup_order", lookup_order.description,
                                dict(lookup_order.input_schema))
    assert specs[1] == ToolSpec("echo", "Say it back.", {"type": "object", "properties": {}})
    tools: list[Tool] = [lookup_order, Echo()]
    assert [t.name for t in tools] == ["lookup_order", "echo"]


async def test_valid_input_runs_and_the_result_becomes_sorted_json_or_text() -> None:
    text = await lookup_order.run({"order_id": "A-1042", "include_items": True})
    assert text == ('{"items": ["mug"], "limit": 5, "order_id": "A-1042", "status": "shipped"}')
    booking = function_tool(book_room)
    assert await booking.run({"room": "north", "people": ["Ana", "Bo"], "hours": 2}) == (
        "booked north for Ana, Bo (2 h)"
    )
    assert "limit\": null" in await lookup_order.run({"order_id": "A-1", "limit": None})


@pytest.mark.parametrize(("bad_input", "expected"), [
    ({}, "input is missing required 'order_id'"),
    ({"order_id": 1042}, "order_id must be a string, got 1042 (integer)"),
    ({"order_id": "A", "include_items": "yes"},
     'include_items must be a boolean, got "yes" (string)'),
    ({"order_id": "A", "limit": "5"}, 'limit must be an integer or null, got "5" (string)'),
    ({"order_id": "A", "limit": True}, "limit must be an integer or null, got true (boolean)"),
    ({"order_id": "A", "colour": "red"},
     "unknown key 'colour' (known keys: 'order_id', 'include_items', 'limit')"),
])
async def test_bad_input_is_answered_with_an_error_text_and_nothing_runs(
    bad_input: dict[str, Any], expected: str
) -> None:
    calls: list[dict[str, Any]] = []

    async def record(**kwargs: Any) -> str:
        calls.append(kwargs)
        return "ran"

    guarded = FunctionTool(name="lookup_order", description="d",
                           input_schema=lookup_order.input_schema, handler=record)
    text = await guarded.run(bad_input)
    assert text == f"Error: invalid input for tool lookup_order: {expected}. Nothing was run."
    assert calls == []


async def test_nested_values_are_checked_with_their_path() -> None:
    booking = function_tool(book_room)
    assert "people[1] must be a string, got 7 (integer)" in await booking.run(
        {"room": "north", "people": ["Ana", 7], "hours": 1})
    assert 'room must be one of "north", "south", got "east" (string)' in await booking.run(
        {"room": "east", "people": [], "hours": 1})


async def test_explicit_schema_tool_validates_and_passes_keywords() -> None:
    async def weather(city: str) -> dict[str, Any]:
        return {"city": city, "celsius": 21}

    explicit = FunctionTool(
        name="weather", description="Current weather for a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]},
        handler=weather,
    )
    assert await explicit.run({"city": "Oslo"}) == '{"celsius": 21, "city": "Oslo"}'
    assert "missing required 'city'" in await explicit.run({})


def test_tools_that_cannot_be_described_are_refused_at_definition() -> None:
    async def no_doc(x: int) -> int:
        return x

    async def untyped(x) -> int:  # type: ignore[no-untyped-def]
        """Untyped."""
        return int(x)

    async def odd(x: set[int]) -> int:
        """Sets have no JSON form."""
        return len(x)

    def not_async(x: int) -> int:
        """Sync."""
        return x

    with pytest.raises(ConfigError, match="has no description"):
        function_tool(no_doc)
    with pytest.raises(ConfigError, match="parameter 'x' has no type hint"):
        function_tool(untyped)
    with pytest.raises(ConfigError, match="has no JSON schema here"):
        function_tool(odd)
    with pytest.raises(ConfigError, match="must be an async function"):
        function_tool(not_async)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="tool name 'look up' is not allowed"):
        function_tool(lookup_order.handler, name="look up")
