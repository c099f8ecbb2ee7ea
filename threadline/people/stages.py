"""The `access` and `rate_limit` stages (`threadline.stages`): every kind of turn a person
causes (a message, a command, a schedule they set) is held to the deployment's lists
(`threadline.people.access`) and to the per-person rate limit, before anything answers it."""

from __future__ import annotations

from threadline.commands.registry import CommandReply
from threadline.interceptors.rate_limit import RateLimitInterceptor
from threadline.people.access import Access
from threadline.stages import Next, Turn
from threadline.turn import AgentResult


class AccessStage:
    """The `access` stage (`threadline.stages`): a turn is not answered by an agent a list
    keeps its author from; it is still stored, and the log says which list refused it. A
    command that acts on others is refused, in words, to anyone not an admin."""

    acts_after_answer = False  # its turns pass on to the answer and come back as they are

    def __init__(self, access: Access) -> None:
        self.access = access

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        author = turn.author
        if author is None or not turn.agents:
            return await call_next(turn)
        store = turn.actions.store
        command = turn.command
        if command is not None and command.command.acts_on_others and not (
                await self.access.is_admin(store, author)):
            return await self._not_an_admin(turn, command.command.name)
        refused = {agent: where for agent in turn.agents
                   if (where := await self.access.refusal(store, author,
                                                          channel=turn.channel_name,
                                                          agent=agent)) is not None}
        if not refused:
            return await call_next(turn)
        turn.log.info("turn.not_allowed", refused_by=sorted(set(refused.values()))[0],
                      agents=sorted(refused), participant=author.participant.id,
                      detail="stored, not answered")
        narrowed = turn.without(frozenset(refused))
        if narrowed.agents:
            return await call_next(narrowed)
        if turn.scheduled is None:
            await turn.actions.record(turn.message)
        return []

    async def _not_an_admin(self, turn: Turn, name: str) -> list[AgentResult]:
        turn.log.info("pipeline.command_refused", command=name, reason="not an admin")
        if await turn.actions.record(turn.message) is None:
            return []
        responder = turn.actions.agents[turn.agents[0]]
        return [await turn.actions.answer(turn, responder, CommandReply(
            f"Only an admin may use /{name} here: it changes the conversation for everyone. "
            "Ask one of them."), stop_reason="command", command=name)]


class RateLimitStage:
    """The `rate_limit` stage (`threadline.stages`): every kind of turn a person causes (a
    message, a command, a schedule they set) counts against the same limits; over them, the
    turn is stored, the person told once, and nobody answers."""

    acts_after_answer = False  # its turns pass on to the answer and come back as they are

    def __init__(self, limiter: RateLimitInterceptor) -> None:
        self.limiter = limiter

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        author = turn.author
        if author is None or author.participant.kind != "user" or not turn.agents:
            return await call_next(turn)
        verdict = self.limiter.verdict(author)
        if verdict is None:
            return await call_next(turn)
        limit, reply = verdict
        turn.log.warning("turn.rate_limited", limit=limit, participant=author.participant.id,
                         action="replied" if reply else "dropped")
        if turn.scheduled is not None or await turn.actions.record(turn.message) is None:
            return []
        if not reply:
            return []
        responder = turn.actions.agents[turn.agents[0]]
        return [await turn.actions.answer(turn, responder, CommandReply(reply),
                                          stop_reason="rate_limited")]
