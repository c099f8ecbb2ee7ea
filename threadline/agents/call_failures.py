"""The one rule for a model call that failed: worth trying again later, or not.

Every provider's SDK retries 408, 409, 429, 5xx and connection failures itself (with backoff
that honours `retry-after`); what is left when it gives up, or when the whole call outlives the
provider's timeout, is told the same way for every provider:

    too slow (past the timeout, retries included)    ModelUnavailableError
    408/409/429/5xx, an overloaded type, unreachable,
    a connection broken mid-reply                    ModelUnavailableError (a fallback model
                                                     is asked; the person is told to retry)
    credentials rejected, request rejected,
    a reply whose shape cannot be read               ModelError (retrying will not help)

A provider says only what is its own: which of its SDK's errors is which, and the words that
name it and say what to fix (`Words`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from threadline.errors import ModelError, ModelUnavailableError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Words:
    """How a provider's errors name the model and say what to do."""

    subject: str  # what failed: "Anthropic model 'x'", "model 'x' at http://..."
    by: str  # who refuses: "Anthropic", "the server"
    model: str  # what it refuses: "model 'x'", "model 'x' at http://..."
    credentials: str  # what to do when the key is rejected
    reach: str  # what to check when the server cannot be reached
    rejected: str  # what to check when a request is refused


def unavailable_status(status: int) -> bool:
    """A status worth trying again later (what the SDKs retried before giving up)."""
    return status in (408, 409, 429) or status >= 500


def rejected_credentials(words: Words, detail: str) -> ModelError:
    return ModelError(f"{words.by} rejected the credentials for {words.model} ({detail}). "
                      f"{words.credentials}")


def status_failure(words: Words, *, status: int, detail: str, retries: int,
                   overloaded: bool = False) -> ModelError:
    """An error status the SDK gave up on: unavailable, or a rejected request."""
    if unavailable_status(status) or overloaded:
        return ModelUnavailableError(
            f"{words.subject} is unavailable ({detail}) after {retries} retries. Try again "
            "later; if it persists, raise max_retries or check the rate limits.")
    return ModelError(f"{words.by} rejected the request for {words.model} ({detail}). "
                      f"{words.rejected}; retrying will not help.")


def unreachable(words: Words, *, detail: str, retries: int) -> ModelUnavailableError:
    return ModelUnavailableError(f"{words.subject} could not be reached ({detail}) after "
                                 f"{retries} retries. {words.reach}, then try again.")


def broken_reply(words: Words, exc: Exception, *, transport: bool) -> ModelError:
    """An error while the reply was read: the connection broke (unavailable), or the reply
    had a shape we cannot use (a provider or proxy fault)."""
    what = f"{type(exc).__name__}: {short(str(exc))}"
    if transport:
        return ModelUnavailableError(f"the connection broke during the reply of "
                                     f"{words.subject} ({what}). Try again later.")
    return ModelError(f"{words.subject} returned a reply that Threadline cannot read ({what}). "
                      "This is a provider or proxy fault; try again, and report it if it "
                      "persists.")


async def within(seconds: float, call: Awaitable[T], *, words: Words, log: Any,
                 failure: Callable[[Exception], ModelError]) -> T:
    """`call`'s result, or the `ModelError` its failure is: past `seconds` (retries
    included), or what `failure` makes of what the SDK raised; logged either way."""
    try:
        async with asyncio.timeout(seconds):
            return await call
    except TimeoutError as exc:
        log.warning("model_timeout", timeout=seconds)
        raise ModelUnavailableError(
            f"{words.subject} gave no complete reply within {seconds:g} s (retries included). "
            "It may be slow or overloaded: try again later, or raise the provider's timeout."
        ) from exc
    except ModelError:
        raise
    except Exception as exc:  # only the SDK call and reading its result are inside
        made = failure(exc)
        log.warning("model_failed", error=str(made))
        raise made from exc


def short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
