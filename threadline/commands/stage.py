"""The `commands` stage: a turn that sends a registered command is answered by its handler.

No model runs: the handler's answer is posted once through the reply ledger and recorded like
any reply, so a command taken again after a crash is answered from the ledger. It comes after
the access and rate-limit stages: a person a list keeps out, or who is over their rate, gets
no command either, and one that acts on others needs an admin there.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import structlog

from threadline.commands.registry import (
    CommandChoice,
    CommandReply,
    CommandRequest,
    Origin,
)
from threadline.errors import StoreError
from threadline.stages import Next, Turn
from threadline.turn import AgentResult, reply_turn_id

log = structlog.get_logger("threadline.pipeline")


class CommandStage:
    """Claims command turns; see the module docstring."""

    acts_after_answer = False  # its turns pass on to the answer and come back as they are

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        command = turn.command
        if command is None:
            return await call_next(turn)
        actions = turn.actions
        name = command.command.name
        marked = await actions.record(replace(turn.message, metadata=replace(
            turn.message.metadata, extra={**turn.message.metadata.extra, "command": name})))
        if marked is None or not command.targets:
            return []
        recorded = await actions.store.get_by_ids(marked.conversation_id, [marked.id])
        if not recorded:  # a handler reads the history up to the command's sequence
            raise StoreError(f"command turn {marked.id} is not in the store yet (it waits in "
                             "the outbox); answered once it is")
        responder = command.targets[0]
        bound = turn.log.bind(command=name, agent=responder.name)
        turn = replace(turn, message=marked, log=bound)
        channel = command.attachment.channel
        identity = channel.identity if channel is not None else None
        answer = await command.command.handler(CommandRequest(
            call=command.call, message=recorded[0], present=command.attachment.agents,
            targets=command.targets,
            bot=identity.username or identity.display_name if identity is not None else None,
            store=actions.store, outbox=actions.outbox,
            channel=channel.name if channel is not None else None,
            notify=partial(_notify, turn, command=name)))
        result = await actions.answer(turn, responder, answer, command=name,
                                      stop_reason="command")
        bound.info("pipeline.command_answered", delivered=len(result.delivered_ids))
        return [result]


async def _notify(turn: Turn, origin: Origin, text: str, *,
                  choices: tuple[CommandChoice, ...] = (), tag: str, command: str) -> bool:
    """A command's message posted where `origin` was said, on the channel that took it
    (`CommandRequest.notify`), through the reply ledger like every answer; False when that
    channel is not here, the turn is unknown, or it could not be posted."""
    actions = turn.actions
    attachment = actions.attachments.get(origin.channel)
    if attachment is None or attachment.channel is None or not attachment.agents:
        log.warning("pipeline.notice_not_posted", channel=origin.channel,
                    conversation_id=origin.conversation_id,
                    reason="that channel does not run in this process")
        return False
    found = await actions.store.get_by_ids(origin.conversation_id, [origin.turn_id])
    if not found:
        return False
    responder = attachment.agents[0]
    there = Turn(message=found[0], attachment=attachment, retried=False, log=turn.log,
                 actions=actions)
    result = await actions.answer(
        there, responder, CommandReply(text, choices=choices), stop_reason="command",
        command=command, reply_id=f"{reply_turn_id(found[0], responder.name)}:{tag}")
    return bool(result.delivered_ids)
