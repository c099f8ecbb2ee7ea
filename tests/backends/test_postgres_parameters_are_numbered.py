"""The operations' `:name` SQL reaches asyncpg as `$n` (`postgres.numbered`), by the rule
SQLAlchemy's `text()` used before: a name used twice keeps its number, casts and escaped colons
are left as written."""

from __future__ import annotations

from sqlalchemy import text

from threadline.backends.sql.postgres import numbered


def test_names_become_numbers_in_order_and_casts_stay() -> None:
    sql = ("SELECT CAST(:turn AS TEXT), (:cid)::bigint, '1'::int, 'a\\:b' FROM t "
           "WHERE id = :turn AND n > :n_2")
    assert numbered(sql) == (
        "SELECT CAST($1 AS TEXT), ($2)::bigint, '1'::int, 'a\\:b' FROM t "
        "WHERE id = $1 AND n > $3", ("turn", "cid", "n_2"))
    assert list(text(sql).compile().params) == ["turn", "cid", "n_2"]  # text() agrees
