"""What the burst tests share: a model that answers every question its prompt holds, and
reading the stored turns and the inbox back."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.anthropic import Reply, text

_TAG = re.compile(r"q\d+-\d+")


def words_of(body: dict[str, Any]) -> str:
    """Every user message of a Messages API request body, as one text."""
    parts = []
    for message in body["messages"]:
        content = message["content"]
        parts.append(content if isinstance(content, str) else " ".join(
            block.get("text", "") for block in content if isinstance(block, dict)))
    return " ".join(parts)


def answer_every_question(body: dict[str, Any], *, delay: float = 0.1) -> Reply:
    """'answer' and every question tag the prompt holds that no earlier answer named."""
    words = words_of(body)
    answered = set(re.findall(r"answer ((?:q\d+-\d+ ?)+)", words))
    done = {tag for said in answered for tag in said.split()}
    tags = [t for t in dict.fromkeys(_TAG.findall(words)) if t not in done]
    return text("answer " + " ".join(tags), delay=delay)


def tags_in(words: str) -> list[str]:
    return _TAG.findall(words)
