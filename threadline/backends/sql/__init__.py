"""The SQL backend: SQLite (embedded default, one process) and PostgreSQL (several processes).

Every part lives in the history's database and shares its threads, connections and error
translation (`SqlConversationStore.run`): the inbox and reply ledger, people, spend, reply
records, tool approvals, the bytes of turns' files, turns' vectors (with numpy: the embeddings
extra), gateway shard leases, a Slack app's installations, the `http` platform's replies
waiting for their caller, Matrix accounts' sync positions; on PostgreSQL a conversation lock
(advisory locks) owns a conversation across processes. A delivered reply's writes (ledger,
history, inbox, spend) share one transaction (`SqlWritesTogether`). Turns the database cannot
take wait in an outbox file beside it.
"""

from __future__ import annotations

import hashlib
from functools import partial
from pathlib import Path

from threadline.backends.base import Backend, BackendOptions, BackendPlug
from threadline.backends.sql.approvals import SqlApprovalBook
from threadline.backends.sql.database_url import database_url
from threadline.backends.sql.feedback import SqlFeedbackBook
from threadline.backends.sql.files import SqlFileStore
from threadline.backends.sql.handoffs import SqlHandoffBook
from threadline.backends.sql.http_replies import SqlReplyOutbox
from threadline.backends.sql.link_requests import SqlLinkRequests
from threadline.backends.sql.locks import PostgresConversationLock
from threadline.backends.sql.matrix_sync import SqlMatrixSyncPositions
from threadline.backends.sql.people import SqlPeopleDirectory
from threadline.backends.sql.records import SqlReplyRecords
from threadline.backends.sql.schedules import SqlScheduleBook
from threadline.backends.sql.shard_leases import SqlShardLeases
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.backends.sql.store import SqlConversationStore
from threadline.backends.sql.together import SqlWritesTogether
from threadline.history.beside import add_adopter
from threadline.history.store import ConversationStore
from threadline.history.vectors import VectorIndex, vectors_supported


def _outbox_path(store: SqlConversationStore) -> Path:
    """Next to a SQLite file; for PostgreSQL, in the working folder, named after the URL."""
    if store.dialect == "sqlite" and store.url.database:
        return Path(f"{store.url.database}.outbox.jsonl")
    url = store.url.render_as_string(hide_password=True)
    return Path.cwd() / f"threadline-{hashlib.sha256(url.encode()).hexdigest()[:12]}.outbox.jsonl"


def _slack_installations(store: SqlConversationStore) -> object:
    """The Slack installation book (imported here: it needs the slack extra)."""
    from threadline.backends.sql.slack_installations import SqlSlackInstallations

    return SqlSlackInstallations(store)


def _vectors(store: SqlConversationStore) -> VectorIndex | None:
    if not vectors_supported():
        return None
    from threadline.backends.sql.vectors import SqlVectorIndex  # needs numpy

    return SqlVectorIndex(store)


def _parts(store: SqlConversationStore, options: BackendOptions, *, lock_url: str | None
           ) -> Backend:
    postgres = store.dialect == "postgresql"
    lock = PostgresConversationLock(lock_url) if postgres and lock_url else None
    owner = (Path(f"{store.url.database}.owner-lock")
             if not postgres and store.url.database else None)
    return Backend(name=store.dialect, history=store,
                   shown_url=store.url.render_as_string(hide_password=True), inbox=store.inbox,
                   people=SqlPeopleDirectory(store), link_requests=SqlLinkRequests(store),
                   speakers=store,
                   spend=SqlSpendLedger(store),
                   records=SqlReplyRecords(store), schedules=SqlScheduleBook(store),
                   handoffs=SqlHandoffBook(store), approvals=SqlApprovalBook(store),
                   feedback=SqlFeedbackBook(store),
                   files=SqlFileStore(store, directory=options.files_directory,
                                      inline_max_bytes=options.files_inline_max_bytes),
                   shard_leases=SqlShardLeases(store), vectors=_vectors(store), lock=lock,
                   together=SqlWritesTogether(store),
                   platform_parts={"slack": partial(_slack_installations, store),
                                   "http": partial(SqlReplyOutbox, store),
                                   "matrix": partial(SqlMatrixSyncPositions, store)},
                   outbox_path=options.outbox_path or _outbox_path(store), owner_file=owner,
                   notifies_across_processes=postgres)


def build(url: str, options: BackendOptions) -> Backend:
    return _parts(SqlConversationStore(url, busy_timeout=options.busy_timeout), options,
                  lock_url=url)


def check_url(url: str) -> None:
    database_url(url)


def adopt(history: ConversationStore) -> Backend | None:
    if not isinstance(history, SqlConversationStore):
        return None
    # A history built directly has no lock: whoever built it asks for one (`Team(lock=...)`).
    return _parts(history, BackendOptions(), lock_url=None)


BACKEND = BackendPlug(name="sql", schemes=("sqlite", "postgresql"), build=build,
                      check_url=check_url)

add_adopter(adopt)  # a history of ours built directly finds its parts

__all__ = ["BACKEND", "SqlConversationStore"]
