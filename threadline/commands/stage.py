"""The `commands` stage: a turn that sends a registered command is answered by its handler.

No model runs: the handler's answer is posted once through the reply ledger and recorded like
any reply, so a command taken again after a crash is answered from the ledger. It comes after
the access and rate-limit stages: a person a list keeps out, or who is over their rate, gets
no command either, and one that acts on others needs an admin there.
"""

from __future__ import annotations

from dataclasses import replace

from threadline.commands.registry import CommandRequest
from threadline.errors import StoreError
from threadline.stages import Next, Turn
from threadline.turn import AgentResult


class CommandStage:
    """Claims command turns; see the module docstring."""

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
            notify=actions.notifier(name)))
        result = await actions.answer(turn, responder, answer, command=name,
                                      stop_reason="command")
        bound.info("pipeline.command_answered", delivered=len(result.delivered_ids))
        return [result]
