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
from threadline.schedules.limits import ScheduleLimits, ScheduleRefused
from threadline.schedules.schedule import Schedule
from threadline.schedules.zones import TimeZones

log = structlog.get_logger("threadline.schedules")


class Scheduler(Periodic):
    """Fires due schedules into the pipeline; also what the `schedule` tool and `/remind`
    need (the book, the clock, the time zones, who may cancel others' schedules, and the
    limits on what a person may schedule)."""

    def __init__(self, book: ScheduleBook, *, wake: Callable[[str], None] = lambda _: None,
                 clock: Clock | None = None, zones: TimeZones | None = None,
                 admins: Collection[str] = (), limits: ScheduleLimits | None = None,
                 poll_interval: float = 1.0,
                 late_after: float = 60.0, grace: float = 86_400.0, batch: int = 200) -> None:
        self.book = book
        self.wake = wake  # the turn pipeline's: its scan would find the turns a second later
        self.clock = clock or SystemClock()
        self.zones = zones or TimeZones()
        self.admins = frozenset(admins)
        self.limits = limits or ScheduleLimits()
        self.late_after = late_after
        self.grace = grace
        self.batch = batch
        self._wait = poll_interval
        super().__init__(self._round, every=poll_interval, name="schedules.round")

    async def add_asked(self, schedule: Schedule) -> Schedule:
        """Keep a schedule a person asked for (the tool, `/remind`), within the operator's
        limits: `ScheduleRefused` saying the floor or the cap it would break."""
        try:
            if schedule.cron is not None:
                self.limits.check_cron(schedule.cron, tz=schedule.timezone,
                                       now=self.clock.now())
            return await self.book.add_within(schedule, self.limits)
        except ScheduleRefused as exc:
            log.info("schedules.refused", conversation_id=schedule.conversation_id,
                     created_by=schedule.created_by, reason=str(exc))
            raise

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
