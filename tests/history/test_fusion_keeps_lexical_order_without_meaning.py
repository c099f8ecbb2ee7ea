"""Fusing rankings: without turns found by meaning the lexical ranking comes back unchanged;
with them, a turn both rankings find leads and one only meaning finds still gets in."""

from __future__ import annotations

from tests.history.helpers import turn
from threadline.history.fusion import FoundByMeaning, Fusion, fuse_messages, fuse_ranks


def test_without_meaning_the_lexical_ranking_is_unchanged() -> None:
    lexical = [7, 3, 9, 1]
    assert fuse_ranks(lexical, None, limit=3) == [7, 3, 9]
    assert fuse_ranks(lexical, FoundByMeaning(()), limit=10) == lexical


def test_a_turn_both_find_leads_and_one_only_meaning_finds_gets_in() -> None:
    fused = fuse_ranks([7, 3, 9, 1], FoundByMeaning((42, 9), Fusion(k=10, weight=1.0)),
                       limit=4)
    assert fused[0] == 9
    assert 42 in fused
    assert len(fused) == 4


def test_a_light_meaning_weight_keeps_the_lexical_top() -> None:
    fused = fuse_ranks([7, 3, 9], FoundByMeaning((42,), Fusion(k=60, weight=0.3)), limit=4)
    assert fused == [7, 3, 9, 42]


def test_one_persons_turns_fuse_by_id_without_duplicates() -> None:
    a, b, c = (turn(text, minute=n) for n, text in enumerate(("a", "b", "c")))
    fused = fuse_messages([a, b], [c, b], fusion=Fusion(k=10, weight=1.0), limit=5)
    assert [m.id for m in fused] == [b.id, a.id, c.id]
