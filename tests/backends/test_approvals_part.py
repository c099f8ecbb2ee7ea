"""The approval book is a backend part: the SQL and memory backends keep one (the memory one
moves each approval once, like the SQL one), and a backend without one says so at start."""

from __future__ import annotations

from pathlib import Path

from threadline.agents.approvals import Approval, MemoryApprovalBook
from threadline.backends import Backend, BackendOptions, build_backend
from threadline.history.memory import InMemoryConversationStore


def test_sql_and_memory_backends_keep_approvals(tmp_path: Path) -> None:
    sql = build_backend(f"sqlite:///{tmp_path / 't.db'}", BackendOptions())
    memory = build_backend("memory://", BackendOptions())
    assert sql.approvals is not None and memory.approvals is not None
    assert not any("approval" in line for line in sql.missing() + memory.missing())


def test_a_backend_without_approvals_says_so() -> None:
    bare = Backend(name="bare", history=InMemoryConversationStore())
    assert any("no approval book" in line for line in bare.missing())


async def test_memory_book_moves_an_approval_once() -> None:
    book = MemoryApprovalBook()
    first = await book.open(Approval(id="ap-1", conversation_id="c", turn_id="t", agent="a",
                                     tool="refund", input={"order": "1"}, approvers=("x",),
                                     state="pending"))
    again = await book.open(Approval(id="ap-1", conversation_id="c", turn_id="t", agent="a",
                                     tool="refund", input={"order": "1"}, approvers=("x",),
                                     state="pending", posted=True))
    assert again == first
    await book.mark_posted("ap-1")
    assert await book.move("ap-1", "pending", "approved", decided_by="x")
    assert await book.move("ap-1", "approved", "running")
    assert not await book.move("ap-1", "approved", "running")
    found = await book.get("ap-1")
    assert found is not None and found.state == "running" and found.posted
