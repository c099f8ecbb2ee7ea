"""Recently seen event keys, for the platform changes a channel must apply only once.

New messages need no dedup here: the receiver drops a redelivered message by its turn id and
keeps each conversation in arrival order (see `ChannelEvents`). Edits and deletions are
different: they are applied by the channel's events as they come, and a late copy of an older
edit (Slack retries an event with the same `event_id`; Discord replays after a resume) would
undo a newer one. `RecentKeys` lets the first sighting through and drops the copies.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable


class RecentKeys:
    """A bounded memory of recently seen event keys: the first sighting wins."""

    def __init__(self, size: int = 10_000) -> None:
        self._size = size
        self._keys: OrderedDict[Hashable, None] = OrderedDict()

    def first_sighting(self, key: Hashable) -> bool:
        """True the first time `key` is seen (among the last `size` keys); remembers it."""
        if key in self._keys:
            self._keys.move_to_end(key)
            return False
        self._keys[key] = None
        if len(self._keys) > self._size:
            self._keys.popitem(last=False)
        return True

    def forget(self, key: Hashable) -> None:
        """Let a redelivery of `key` through again (its first handling failed)."""
        self._keys.pop(key, None)
