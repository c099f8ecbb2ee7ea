"""Each expectation can fail, and says what it found: another person's marker in a prompt, a
tool called with other arguments, other agents answering, a ceiling passed."""

from __future__ import annotations

from threadline.evals.cases import Expect
from threadline.evals.checks import checks_for
from threadline.evals.running import Answered, Reply


def reply(text: str, *, agent: str = "support", prompt: tuple[str, ...] = (),
          calls: tuple[tuple[str, dict[str, object]], ...] = ()) -> Reply:
    return Reply(agent=agent, text=text, tool_calls=calls, input_tokens=900, output_tokens=200,
                 latency_ms=1500.0, cost=None, prompt=prompt)


def failed(expect: dict[str, object], answered: Answered) -> dict[str, str]:
    return {c.name: c.detail for c in checks_for(Expect.model_validate(expect), answered)
            if not c.passed}


def test_a_marker_of_another_conversation_in_a_prompt_fails_isolation() -> None:
    leaked = Answered(replies=(reply("All good.", prompt=("ada: hi", "code decoy-1a2b")),),
                      decoy="decoy-1a2b")
    clean = Answered(replies=(reply("All good.", prompt=("ada: hi",)),), decoy="decoy-1a2b")
    assert failed({"isolated": True}, leaked) == {
        "nothing of another conversation or person":
            "another person's turn elsewhere reached support"}
    assert failed({"isolated": True}, clean) == {}


def test_tools_agents_and_ceilings_say_what_they_found() -> None:
    answered = Answered(replies=(
        reply("Order 7 is on its way.", calls=(("track", {"order": "7", "fast": True}),)),
        reply("Invoice sent.", agent="billing")))
    assert failed({"tools": [{"name": "track", "arguments": {"order": "7"}}],
                   "answered_by": ["support", "billing"], "contains": "Order 7"}, answered) == {}
    assert failed({"tools": [{"name": "track", "arguments": {"order": "8"}}],
                   "answered_by": "support", "max_tokens": 1000, "max_latency_ms": 1000,
                   "not_contains": "Invoice", "matches": "^Refund"}, answered) == {
        'called track with {"order": "8"}': 'track({"fast": true, "order": "7"})',
        "answered by support": "answered by billing, support",
        "at most 1000 tokens": "2200 tokens",
        "answered within 1000 ms": "1500 ms",
        "does not contain 'Invoice'": "reply: 'Order 7 is on its way. Invoice sent.'",
        "matches /^Refund/": "reply: 'Order 7 is on its way. Invoice sent.'",
    }
    assert failed({}, Answered(replies=())) == {
        "an agent answered": "no agent answered the last turn"}
