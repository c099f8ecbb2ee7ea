"""Scheduled turns: reminders, recurring posts and follow-ups, delivered once, on time.

A schedule is kept in the store's database (`book`), fired by every process's `Scheduler`
into the turn inbox when due (one process claims each slot), and answered by the turn pipeline
like any turn: posted through the reply ledger, recorded in the history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.schedules.book import Firing, ScheduleBook
    from threadline.schedules.clock import Clock, SystemClock
    from threadline.schedules.commands import schedule_commands
    from threadline.schedules.limits import ScheduleLimits, ScheduleRefused
    from threadline.schedules.schedule import Schedule
    from threadline.schedules.scheduler import Scheduler
    from threadline.schedules.timing import Timing, parse_when
    from threadline.schedules.tool import schedule_tool
    from threadline.schedules.zones import TimeZones

__all__ = ["Clock", "Firing", "Schedule", "ScheduleBook", "ScheduleLimits", "ScheduleRefused",
           "Scheduler", "SystemClock", "TimeZones", "Timing", "parse_when", "schedule_commands",
           "schedule_tool"]

__getattr__ = lazy_exports(__name__, {
    "Firing": "threadline.schedules.book",
    "ScheduleBook": "threadline.schedules.book",
    "Clock": "threadline.schedules.clock",
    "SystemClock": "threadline.schedules.clock",
    "schedule_commands": "threadline.schedules.commands",
    "ScheduleLimits": "threadline.schedules.limits",
    "ScheduleRefused": "threadline.schedules.limits",
    "Schedule": "threadline.schedules.schedule",
    "Scheduler": "threadline.schedules.scheduler",
    "Timing": "threadline.schedules.timing",
    "parse_when": "threadline.schedules.timing",
    "schedule_tool": "threadline.schedules.tool",
    "TimeZones": "threadline.schedules.zones",
})
