"""The commands every team answers: `/forget`, `/summary` and `/agents`.

`/forget` makes the agents it is for forget this conversation (see `history.summary` for what
that means in a shared history: a per-agent cutoff, not a deletion). It asks first; the same
person confirms with `/forget confirm` (or the Forget button under the question, where the
platform has buttons) within `CONFIRM_WITHIN`. The question is a recorded
command answer, so the confirmation works across restarts and processes, like every turn.
"""

from __future__ import annotations

from datetime import timedelta

from threadline.commands.registry import (
    Command,
    CommandCall,
    CommandChoice,
    CommandReply,
    CommandRequest,
)
from threadline.history.addressing import normalize_mention
from threadline.history.model import StoredMessage
from threadline.history.summary import (
    forget_marker,
    forgotten_through,
    is_forget_marker,
    latest_summary,
)
from threadline.turn import reply_turn_id

CONFIRM_WITHIN = timedelta(minutes=10)
CONFIRM_WORD = "confirm"
_LOOK_BACK = 200  # a person's own recent turns searched for the question they confirm


def _names(request: CommandRequest) -> str:
    return ", ".join(agent.name for agent in request.targets)


async def forget(request: CommandRequest) -> CommandReply:
    """Ask, then (on `/forget confirm`) store a forget marker for each agent it is for."""
    message, store = request.message, request.store
    if CONFIRM_WORD in request.words:
        return await _confirm(request)
    cutoffs = [forgotten_through(await latest_summary(store, message.conversation_id, a.name))
               for a in request.targets]
    since = min((c or 0) for c in cutoffs)
    earlier = [m for m in await store.get(message.conversation_id, after_sequence=since,
                                          through_sequence=message.sequence, limit=_LOOK_BACK)
               if m.id != message.id and not m.is_command]
    if not earlier:
        return CommandReply(f"Nothing to forget: {_names(request)} has no history of this "
                            "conversation yet.", {"forget": "nothing"})
    minutes = int(CONFIRM_WITHIN.total_seconds() // 60)
    return CommandReply(
        f"This makes {_names(request)} forget everything said here so far (the record stays "
        f"for the other agents and for operators). To go ahead, send /forget {CONFIRM_WORD} "
        f"within {minutes} minutes.",
        {"forget": "asked", "asked_by": message.participant.id,
         "agents": [a.name for a in request.targets]},
        choices=(CommandChoice("Forget", f"/forget {CONFIRM_WORD}"),))


async def _confirm(request: CommandRequest) -> CommandReply:
    message, store = request.message, request.store
    asked = await open_question(request, "forget")
    if asked is None:
        return CommandReply("Nothing to confirm: send /forget first (a request holds for "
                            f"{int(CONFIRM_WITHIN.total_seconds() // 60)} minutes).",
                            {"forget": "unconfirmed"})
    names = [str(n) for n in asked.metadata.extra.get("agents", ())]
    by_name = {a.name: a for a in request.present}
    forgetting = [by_name[n] for n in names if n in by_name]
    for agent in forgetting:
        await store.append(forget_marker(conversation_id=message.conversation_id,
                                         agent_id=agent.name, through=message,
                                         requested_by=message.participant.display_name))
    done = ", ".join(a.name for a in forgetting) or "nobody"
    return CommandReply(f"Done: {done} forgot this conversation up to now.",
                        {"forget": "done", "agents": [a.name for a in forgetting]})


async def open_question(request: CommandRequest, command: str) -> StoredMessage | None:
    """The question `/command` asked this person, still open and recent enough: its stored
    answer (which holds the question's `CommandReply.detail`), or None.

    A question belongs to the person who asked it: only their own turns are read (within
    `CONFIRM_WITHIN`), so nobody else's confirmation, question or chatter can close or bury
    it. Their latest `/command` decides: a question is open; a confirmation answered it
    already, so a second confirm does not act again.
    """
    message = request.message
    own = await request.store.get(
        message.conversation_id, participant_ids=[message.participant.id],
        since=message.timestamp - CONFIRM_WITHIN, through_sequence=message.sequence,
        limit=_LOOK_BACK)
    for turn in reversed(own):
        if turn.id == message.id or turn.metadata.extra.get("command") != command:
            continue
        call = CommandCall.parse(turn.content)
        if call is None or CONFIRM_WORD in call.args.lower().split():
            return None
        answers = await request.store.get_by_ids(
            message.conversation_id, [reply_turn_id(turn, a.name) for a in request.present])
        asked = [a for a in answers if a.metadata.extra.get(command) == "asked"]
        return asked[0] if asked else None
    return None


async def summary(request: CommandRequest) -> CommandReply:
    """Each agent's standing summary of this conversation, or why there is none."""
    conversation_id = request.message.conversation_id
    parts = []
    for agent in request.targets:
        standing = await latest_summary(request.store, conversation_id, agent.name)
        if standing is None:
            threshold = agent.assembler_options.rolling_summary_threshold
            parts.append(f"{agent.name} has no summary of this conversation yet (one is "
                         f"written once it holds more than {threshold} turns).")
        elif is_forget_marker(standing):
            parts.append(f"{agent.name} was asked to forget this conversation; nothing has "
                         "been summarized since.")
        else:
            parts.append(f"{agent.name}'s summary:\n{standing.content}")
    return CommandReply("\n\n".join(parts))


async def agents(request: CommandRequest) -> CommandReply:
    """Who is here, what each does, and how to address them."""
    bot = request.bot
    lines = ["Agents here:"]
    for position, agent in enumerate(request.present):
        ways = [f"@{agent.name}"]
        ways += [f"@{a}" for a in agent.aliases
                 if normalize_mention(a) != normalize_mention(agent.name)]
        if position == 0 and bot:
            ways.append(f"@{bot} (this bot's own mention)")
        what = f": {agent.description}" if agent.description else ""
        lines.append(f"- {agent.name}{what} (address with {', '.join(ways)})")
    lines.append("Write the @name in your message, or reply to an agent's message to go on "
                 "with it.")
    return CommandReply("\n".join(lines))


FORGET = Command("forget", "Make the agents here forget this conversation (asks first)",
                 forget, usage="[confirm] [agent]")
SUMMARY = Command("summary", "Show what the agents here remember of this conversation",
                  summary, usage="[agent]")
AGENTS = Command("agents", "Who is here and how to address them", agents)
BUILTIN_COMMANDS = (FORGET, SUMMARY, AGENTS)
