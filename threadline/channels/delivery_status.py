"""What a platform said became of a posted reply: sent, delivered, read, or failed.

Platforms that report it (WhatsApp's status callbacks) send one status per posted message,
out of order and more than once: a `read` may come before its `delivered`, and Meta delivers
a callback again when it is unsure we got it. So a reply record keeps, per platform message
id, only the furthest status seen (sent < delivered < read); a failure is kept with its error
whatever came before it, since it is what an operator must see. The record's
`delivery_status` maps each platform message id to `PartStatus.as_dict()`.

A channel hands statuses to a `DeliveryStatuses` keeper: the backend's reply records
(`threadline.inspector.records`), offered through `ChannelContext.delivery_statuses`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

# How far along each status is; a status not named here (a newer one) is kept only when
# nothing was known yet.
PROGRESS = {"sent": 1, "delivered": 2, "read": 3, "failed": 4}


@dataclass(frozen=True, slots=True)
class PartStatus:
    """One platform message's status, when the platform said so, and for a failure why."""

    status: str
    at: datetime
    error_code: int | None = None
    error_title: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, `at` as ISO 8601; the error fields only for a failure."""
        data: dict[str, Any] = {"status": self.status, "at": self.at.isoformat()}
        if self.error_code is not None or self.error_title is not None:
            data["error_code"] = self.error_code
            data["error_title"] = self.error_title
        return data


def advanced(known: Mapping[str, Any] | None, platform_id: str,
             status: PartStatus) -> dict[str, Any] | None:
    """`known` with `status` kept for `platform_id` when it is further along than what was
    there; None when it changes nothing (an older or repeated status)."""
    statuses = dict(known or {})
    before = statuses.get(platform_id)
    if isinstance(before, Mapping):
        had = PROGRESS.get(str(before.get("status")), 0)
        if PROGRESS.get(status.status, 0) <= had:
            return None
    statuses[platform_id] = status.as_dict()
    return statuses


class DeliveryStatuses(Protocol):
    """Keeps what a platform said became of posted replies (the backend's reply records)."""

    async def note_delivery(self, conversation_id: str, platform_id: str,
                            status: PartStatus) -> bool:
        """Keep `status` on the record of the reply posted as `platform_id` (one of its
        `delivered_ids`) in this conversation, when it is further along than what the record
        has; False: no record has that id, or the status changed nothing."""
        ...
