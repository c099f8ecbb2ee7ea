"""Tool calls that wait for a person's approval in the channel, durably and at most once.

A tool (or a whole MCP server) can require approval. When the model asks for it, the turn
pauses on `ApprovalGate.run`: the call is written to the store (`ApprovalBook`), the channel
shows it (tool, input, agent) with Approve and Deny buttons, and the gate waits for the row to
be decided. A button press arrives as a command turn from the person pressing (`/approve ID`,
`/deny ID`); the pipeline hands it to `ApprovalGate.on_click` as soon as it is recorded (the
paused turn holds the conversation, so the decision cannot wait its turn in line), and the
command is answered in words in its turn. Only the asker, or the configured approvers, may
decide; anyone else's press changes nothing and is answered so.

The row's id is made of the turn, the agent, the tool and its input: when the process dies
while a call waits, the turn is answered again after the restart (or by another replica), the
model asks for the same call, and the gate finds the same row: still pending (it waits again,
nothing is posted twice), approved (it runs now), or already run (its stored result is used).
The move from approved to running is one guarded update, so the tool runs at most once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import structlog

from threadline.commands import Command, CommandChoice, CommandReply, CommandRequest
from threadline.errors import ChannelError
from threadline.history.model import StoredMessage, ToolCall
from threadline.history.speakers import identity_of
from threadline.history.store import ConversationStore
from threadline.people.access import Access
from threadline.turn import TurnContext, reply_turn_id

log = structlog.get_logger("threadline.approvals")

class ApprovalChannel(Protocol):
    """What the gate needs of a channel: a post with buttons (`Channel.send_choices`)."""

    async def send_choices(self, inbound: StoredMessage, text: str,
                           choices: Sequence[CommandChoice], *,
                           agent_name: str | None = None) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Approval:
    """One call waiting for (or given) a decision."""

    id: str
    conversation_id: str
    turn_id: str
    agent: str
    tool: str
    input: Mapping[str, Any]
    approvers: tuple[str, ...]
    state: str  # pending, approved, running, ran, denied, expired
    decided_by: str | None = None
    result: str | None = None
    is_error: bool = False
    posted: bool = False
    created_us: int = 0
    expires_us: int = 0


def approval_id(turn_id: str, agent: str, tool: str, input: Mapping[str, Any]) -> str:
    """The same call of the same turn gets the same id, in every attempt at the turn."""
    key = json.dumps([turn_id, agent, tool, input], sort_keys=True, ensure_ascii=False)
    return "ap-" + hashlib.sha256(key.encode()).hexdigest()[:16]


class ApprovalBook(Protocol):
    """Where approvals are kept (a backend part; the SQL one is
    `threadline.backends.sql.approvals.SqlApprovalBook`)."""

    async def open(self, approval: Approval) -> Approval:
        """The row for this call: created pending, or as an earlier attempt left it."""
        ...

    async def get(self, id: str) -> Approval | None: ...

    async def move(self, id: str, before: str, after: str, **extra: Any) -> bool:
        """`before` -> `after` if nobody moved it first; True when this call moved it."""
        ...

    async def mark_posted(self, id: str) -> None: ...


class MemoryApprovalBook:
    """Approvals in process memory (the memory backend's: gone at restart, like its turns)."""

    def __init__(self) -> None:
        self._rows: dict[str, Approval] = {}

    async def open(self, approval: Approval) -> Approval:
        return self._rows.setdefault(approval.id, approval)

    async def get(self, id: str) -> Approval | None:
        return self._rows.get(id)

    async def move(self, id: str, before: str, after: str, **extra: Any) -> bool:
        found = self._rows.get(id)
        if found is None or found.state != before:
            return False
        self._rows[id] = replace(found, state=after, **extra)
        return True

    async def mark_posted(self, id: str) -> None:
        found = self._rows.get(id)
        if found is not None:
            self._rows[id] = replace(found, posted=True)


class ApprovalGate:
    """Pauses a turn on a tool call until it is approved, denied or times out."""

    def __init__(self, book: ApprovalBook | None, *, store: ConversationStore,
                 channels: Mapping[str, ApprovalChannel], access: Access | None = None,
                 approvers: Sequence[str] = (),
                 timeout: float = 600.0, poll: float = 0.25) -> None:
        self.book = book
        self.store = store
        self.channels = channels
        self.access = access or Access()
        self.approvers = tuple(approvers)
        self.timeout = timeout
        self.poll = poll
        self._decided: dict[str, asyncio.Event] = {}

    async def run(self, context: TurnContext, call: ToolCall, tool: Any) -> tuple[str, bool]:
        """The tool's (text, is_error) once approved, or what happened instead, as text."""
        book = self.book
        if book is None:
            return (f"Not run: {call.name} needs a person's approval, and this deployment's "
                    "store keeps no approvals. Tell the person it was not done.", True)
        inbound = context.inbound
        turn_id = reply_turn_id(inbound, context.agent.name)
        asker = identity_of(inbound)
        approvers = self.approvers or ((asker,) if asker else ())
        now_us = int(time.time() * 1_000_000)
        approval = await book.open(Approval(
            id=approval_id(turn_id, context.agent.name, call.name, call.input),
            conversation_id=context.conversation_id, turn_id=turn_id, agent=context.agent.name,
            tool=call.name, input=dict(call.input), approvers=approvers, state="pending",
            created_us=now_us, expires_us=now_us + int(self.timeout * 1_000_000)))
        bound = context.log.bind(approval_id=approval.id, tool=call.name)
        if approval.state == "pending" and not approval.posted:
            try:
                await self._show(book, context, approval)
            except ChannelError as exc:
                bound.warning("approval.not_shown", error=str(exc))
                await book.move(approval.id, "pending", "expired")
                return (f"Not run: the request to approve {call.name} could not be posted "
                        f"({exc}). Tell the person it was not done.", True)
            bound.info("approval.asked", approvers=list(approvers))
        approval = await self._decision(book, approval)
        if approval.state == "approved":
            if not await book.move(approval.id, "approved", "running"):
                approval = await book.get(approval.id) or approval
            else:
                bound.info("approval.running", decided_by=approval.decided_by)
                try:
                    content, is_error = await tool.run(dict(call.input)), False
                except Exception as exc:
                    content, is_error = f"Error: the tool {call.name} failed: {exc}", True
                await book.move(approval.id, "running", "ran", result=content,
                                     is_error=is_error)
                return content, is_error
        return self._outcome(approval)

    def _outcome(self, approval: Approval) -> tuple[str, bool]:
        if approval.state == "ran":
            return approval.result or "", approval.is_error
        if approval.state == "denied":
            return (f"Not run: {approval.decided_by} denied this call to {approval.tool}. Tell "
                    "the person it was not done.", True)
        if approval.state == "running":
            return (f"Not run again: {approval.tool} was started before a restart and its "
                    "outcome is unknown. Ask the person to check before trying again.", True)
        return (f"Not run: nobody approved this call to {approval.tool} in time. Tell the "
                "person it was not done and that they can ask again.", True)

    async def _show(self, book: ApprovalBook, context: TurnContext, approval: Approval) -> None:
        channel = self.channels.get(context.channel or "")
        if channel is None:
            return  # no channel to ask in: it times out and the model is told so
        arguments = json.dumps(dict(approval.input), sort_keys=True, ensure_ascii=False)
        who = ", ".join(approval.approvers) or "nobody"
        text = (f"{approval.agent} wants to run {approval.tool} with {arguments}. "
                f"May it? (Who may decide: {who}. Without buttons, type /approve {approval.id} "
                f"or /deny {approval.id}.)")
        await channel.send_choices(context.inbound, text, (
            CommandChoice("Approve", f"/approve {approval.id}"),
            CommandChoice("Deny", f"/deny {approval.id}")), agent_name=approval.agent)
        await book.mark_posted(approval.id)

    async def _decision(self, book: ApprovalBook, approval: Approval) -> Approval:
        """The row once it is no longer pending, or expired past its time."""
        event = self._decided.setdefault(approval.id, asyncio.Event())
        try:
            while approval.state == "pending":
                left = approval.expires_us / 1_000_000 - time.time()
                if left <= 0:
                    await book.move(approval.id, "pending", "expired")
                else:
                    # Woken at once by a click this process took; polled for another replica's.
                    try:
                        async with asyncio.timeout(min(self.poll, left)):
                            await event.wait()
                    except TimeoutError:
                        pass
                    event.clear()
                approval = await book.get(approval.id) or approval
            return approval
        finally:
            self._decided.pop(approval.id, None)

    # -- the buttons ----------------------------------------------------------------------

    async def on_click(self, message: StoredMessage) -> None:
        """Decide at once on an `/approve ID` or `/deny ID` turn (called once it is recorded)."""
        words = message.content.split()
        if len(words) < 2 or words[0] not in ("/approve", "/deny") or self.book is None:
            return
        approval = await self.book.get(words[1])
        if approval is None or approval.state != "pending":
            return
        names = await self.access.names_of(self.store, message)
        bound = log.bind(conversation_id=message.conversation_id, approval_id=approval.id)
        if not names & set(approval.approvers):
            bound.info("approval.refused_click", participant=message.participant.id)
            return
        after = "approved" if words[0] == "/approve" else "denied"
        who = message.participant.display_name or message.participant.id
        if await self.book.move(approval.id, "pending", after, decided_by=who):
            bound.info(f"approval.{after}", decided_by=who)
            event = self._decided.get(approval.id)
            if event is not None:
                event.set()

    async def _answer(self, request: CommandRequest, verb: str) -> CommandReply:
        """The words a press is answered with, in its turn (the decision was made on arrival)."""
        words = request.call.args.split()
        approval = await self.book.get(words[0]) if words and self.book is not None else None
        if approval is None:
            return CommandReply(f"There is no tool call waiting for approval with that id. "
                                f"Use the {verb} button under the request.")
        names = await self.access.names_of(self.store, request.message)
        if not names & set(approval.approvers):
            who = ", ".join(approval.approvers) or "nobody"
            return CommandReply(f"You may not decide on {approval.tool}: only {who} may. "
                                "Nothing was changed.", detail={"approval": approval.id})
        done = {"ran": f"Approved: {approval.tool} ran.",
                "running": f"Approved: {approval.tool} is running.",
                "approved": f"Approved: {approval.tool} will run.",
                "denied": f"Denied: {approval.tool} was not run.",
                "expired": f"Too late: nobody decided in time, so {approval.tool} was not run."}
        return CommandReply(done.get(approval.state, f"{approval.tool} is {approval.state}."),
                            detail={"approval": approval.id, "state": approval.state})

    def commands(self) -> tuple[Command, Command]:
        async def approve(request: CommandRequest) -> CommandReply:
            return await self._answer(request, "Approve")

        async def deny(request: CommandRequest) -> CommandReply:
            return await self._answer(request, "Deny")

        return (Command("approve", "Approve a tool call an agent asked to make", approve,
                        usage="ID"),
                Command("deny", "Refuse a tool call an agent asked to make", deny, usage="ID"))
