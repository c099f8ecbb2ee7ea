"""The scheduler: claims due schedules and hands their turns to the turn pipeline.

Every process runs one. It looks at the book when the soonest schedule falls due (at least
every `poll_interval` seconds, so schedules added by another process are seen), claims what is
due (`ScheduleBook.claim_due`: one process gets each slot) and wakes the pipeline for each
conversation, which answers the turn like any other. A process that was down finds the slots it
missed at start and fires them late (within `grace`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import structlog

from threadline.periodic import Periodic
from threadline.schedules.book import Firing, ScheduleBook
from threadline.schedules.clock import Clock, SystemClock
from threadline.schedules.zones import TimeZones

log = structlog.get_logger("threadline.schedules")


class Scheduler(Periodic):
    """Fires due schedules into the pipeline; also what the `schedule` tool and `/remind`
    need (the book, the clock, the time zones and who may cancel others' schedules)."""

    def __init__(self, book: ScheduleBook, *, wake: Callable[[str], None] = lambda _: None,
                 clock: Clock | None = None, zones: TimeZones | None = None,
                 admins: Collection[str] = (), poll_interval: float = 1.0,
                 late_after: float = 60.0, grace: float = 86_400.0, batch: int = 200) -> None:
        self.book = book
        self.wake = wake  # the turn pipeline's: its scan would find the turns a second later
        self.clock = clock or SystemClock()
        self.zones = zones or TimeZones()
        self.admins = frozenset(admins)
        self.late_after = late_after
        self.grace = grace
        self.batch = batch
        self._wait = poll_interval
        super().__init__(self._round, every=poll_interval, name="schedules.round")

    async def fire_due(self) -> list[Firing]:
        """Claim every schedule due now and wake the conversations they post in."""
        fired: list[Firing] = []
        while True:
            firings = await self.book.claim_due(self.clock.now(), limit=self.batch,
                                                late_after=self.late_after, grace=self.grace)
            for firing in firings:
                schedule = firing.schedule
                if firing.turn is None:
                    log.warning("schedules.slot_missed", conversation_id=schedule.conversation_id,
                                schedule_id=schedule.id, slot=firing.slot.isoformat(),
                                detail=f"due more than {self.grace:g} s ago (scheduler.grace); "
                                       "not posted")
                    continue
                log.info("schedules.fired", conversation_id=schedule.conversation_id,
                         schedule_id=schedule.id, slot=firing.slot.isoformat(),
                         late=firing.turn.metadata.extra["schedule"]["late_by"] is not None)
                self.wake(schedule.conversation_id)
            fired.extend(firings)
            if len(firings) < self.batch:
                return fired

    async def _round(self) -> None:
        """Fire what is due; note when to look again (the soonest due, at most `every`)."""
        self._wait = self.every
        soonest = await self.book.next_due()  # a read; claiming writes
        if soonest is None or soonest > self.clock.now():
            if soonest is not None:
                self._wait = min(self.every, (soonest - self.clock.now()).total_seconds())
            return
        fired = await self.fire_due()
        self._wait = 0.0 if fired else 0.05  # none: another replica holds them; look again

    def next_wait(self) -> float:
        return max(self._wait, 0.0)
