"""Scheduled turns: reminders, recurring posts and follow-ups, delivered once, on time.

A schedule is kept in the store's database (`book`), fired by every process's `Scheduler`
into the turn inbox when due (one process claims each slot), and answered by the turn pipeline
like any turn: posted through the reply ledger, recorded in the history.
"""

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
