"""`/remind` and `/reminders`: people set, list and cancel schedules without the model.

    /remind in 30 minutes to check the deploy
    /remind tomorrow 9:00: stand-up
    /remind cron 0 9 * * 1 post the weekly report
    /reminders                 this conversation's schedules
    /reminders cancel ID       only the person who set it, or an admin (`scheduler.admins`)
"""

from __future__ import annotations

from threadline.commands.registry import Command, CommandReply, CommandRequest
from threadline.history.speakers import identity_of
from threadline.schedules.schedule import Schedule
from threadline.schedules.scheduler import Scheduler
from threadline.schedules.timing import parse_when, split_when, zone


def schedule_commands(scheduler: Scheduler) -> tuple[Command, Command]:
    """The two commands, bound to this deployment's scheduler."""

    async def remind(request: CommandRequest) -> CommandReply:
        message = request.message
        channel = request.channel
        tz = await scheduler.zones.of(message, channel)
        try:
            when, what = split_when(request.call.args)
            timing = parse_when(when, now=scheduler.clock.now(), tz=tz)
            schedule = await scheduler.add_asked(Schedule.asked_in(
                message, channel=channel, agent=request.targets[0].name, kind="message",
                text=what, timing=timing, timezone=tz))
        except ValueError as exc:  # an unreadable time, or the operator's limits
            return CommandReply(f"Not scheduled: {exc}.", {"schedule": "refused"})
        local = timing.due_at.astimezone(zone(tz))
        return CommandReply(f"OK, I'll post it at {local:%Y-%m-%d %H:%M} {tz}"
                            f"{' and then ' + repr(timing.cron) if timing.cron else ''} "
                            f"({schedule.id}; /reminders cancel {schedule.id} stops it).",
                            {"schedule": schedule.id})

    async def reminders(request: CommandRequest) -> CommandReply:
        message = request.message
        words = request.call.args.split()
        if words[:1] == ["cancel"] and len(words) == 2:
            return await _cancel(request, words[1])
        if words:
            return CommandReply("Write /reminders to list, or /reminders cancel ID.")
        found = await scheduler.book.listed(conversation_id=message.conversation_id)
        if not found:
            return CommandReply("Nothing is scheduled in this conversation.")
        return CommandReply("Scheduled here:\n" + "\n".join(s.describe() for s in found))

    async def _cancel(request: CommandRequest, schedule_id: str) -> CommandReply:
        message = request.message
        schedule = await scheduler.book.get(schedule_id)
        if (schedule is None or schedule.conversation_id != message.conversation_id
                or schedule.state != "active"):
            return CommandReply(f"No active schedule {schedule_id} in this conversation "
                                "(/reminders lists them).")
        admin = identity_of(message) in scheduler.admins
        if schedule.created_by != message.participant.id and not admin:
            return CommandReply(f"Only {schedule.created_by_name or schedule.created_by} (who "
                                f"set it) or an admin can cancel {schedule_id}.",
                                {"schedule": schedule_id, "cancel": "refused"})
        await scheduler.book.cancel(schedule_id)
        return CommandReply(f"Cancelled {schedule_id}.", {"schedule": schedule_id,
                                                           "cancel": "done"})

    return (Command("remind", "Schedule a reminder here (in 30 minutes, tomorrow 9:00, cron)",
                    remind, usage="WHEN to WHAT"),
            Command("reminders", "List this conversation's reminders, or cancel one",
                    reminders, usage="[cancel ID]"))
