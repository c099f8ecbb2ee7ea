"""A sync that wrote many sections leaves the store's word index merged: on SQLite, the FTS5
index in one segment (every transaction that writes turns leaves one more, and a search looks
each word up in every segment); on PostgreSQL, the GIN index's pending list empty (every
search walks it whole until it is merged). A smaller sync leaves the index as the writes left
it. On PostgreSQL only the index's owner may merge it: a role granted the tables alone syncs
all the same, and leaves the merge to autovacuum. On a real SQLite file and a real PostgreSQL.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import asyncpg

from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from tests.knowledge.helpers import documents_source, write
from threadline.backends.sql import SqlConversationStore
from threadline.history.tokens import default_counter
from threadline.knowledge.sync import sync_documents

# Six pages of three sections: each page's sections are written in a transaction of their own.
PAGES = {f"page-{n}.md": f"# Page {n}\n\n## Opening\nPage {n} opens on topic{n} words.\n\n"
                         f"## Middle\nThe middle of page {n} says more of topic{n}.\n\n"
                         f"## End\nPage {n} ends here, with its own closing lines.\n"
         for n in range(6)}


async def unmerged(store: SqlConversationStore) -> int:
    """What is left apart in the word index: FTS5 segments beyond the first, or the pages a
    merge of the GIN pending list takes (which merges them: asked once)."""
    if store.dialect == "sqlite":
        sql = "SELECT count(DISTINCT segid) - 1 FROM threadline_messages_fts_idx"
    else:
        sql = ("SELECT gin_clean_pending_list(CAST('ix_threadline_messages_search' AS "
               "regclass))")

    def read(runner: Any) -> int:
        return int(runner.rows(sql, {})[0][0])

    return int(await store.run("read the word index", read, write=True))


async def synced(store: SqlConversationStore, folder: Path, *, merge_after: int) -> int:
    source = documents_source(store, write(folder, PAGES))
    report = await sync_documents(store, "help", source.documents(), counter=default_counter(),
                                  section_tokens=250, merge_after=merge_after)
    return report.sections_written


async def test_a_sync_of_many_sections_merges_the_word_index(
        sql_store: SqlConversationStore, tmp_path: Path) -> None:
    written = await synced(sql_store, tmp_path / "help", merge_after=10)
    assert written >= 10
    assert await unmerged(sql_store) == 0


async def test_a_smaller_sync_leaves_the_index_as_written(
        sql_store: SqlConversationStore, tmp_path: Path) -> None:
    written = await synced(sql_store, tmp_path / "help", merge_after=1_000)
    assert written < 1_000
    assert await unmerged(sql_store) > 0


async def test_a_role_that_does_not_own_the_index_syncs_all_the_same(tmp_path: Path) -> None:
    owner_url = await fresh_pg_schema(pg_url_or_skip())
    schema = owner_url.rsplit("search_path=", 1)[-1]
    role = f"r_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(owner_url.partition("?")[0].replace("postgresql+asyncpg://",
                                                                      "postgresql://"))
    try:
        async with SqlConversationStore(owner_url) as owner:  # the tables, made by their owner
            await admin.execute(f"CREATE ROLE {role} LOGIN")
            await admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
            await admin.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "
                                f"{schema} TO {role}")
            await admin.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}")
            granted_url = owner_url.replace("://postgres@", f"://{role}@")
            assert granted_url != owner_url, "the test's URL names no user to replace"
            async with SqlConversationStore(granted_url) as granted:
                written = await synced(granted, tmp_path / "help", merge_after=10)
            assert written >= 10
            assert await unmerged(owner) > 0  # left as written, for autovacuum
    finally:
        await drop_pg_schema(owner_url)
        await admin.execute(f"DROP ROLE IF EXISTS {role}")
        await admin.close()
