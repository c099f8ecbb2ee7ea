"""Slack's `<...>` markup is made readable on the way in and escaped on the way out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from threadline.channels.slack.events import (
    classify,
    conversation_id,
    escape_outgoing,
    mentioned_user_ids,
    render_mentions,
)

NAMES = {"U1": "Alice", "U0BOT": "threadline"}


def test_user_mentions_become_at_names_and_are_listed_by_id() -> None:
    text = "<@U0BOT> ask <@U1> and <@U9|bob>, not <@U1> again"
    assert render_mentions(text, NAMES) == "@threadline ask @Alice and @bob, not @Alice again"
    assert mentioned_user_ids(text) == ("U0BOT", "U1", "U9")


def test_channels_specials_links_and_escapes_become_plain_text() -> None:
    text = ("<!here> see <#C1|general>, <https://example.invalid/a|the doc> and "
            "<mailto:a@b.invalid> &lt;3 &amp; <!subteam^S1|@oncall>")
    assert render_mentions(text, {}) == (
        "@here see #general, the doc (https://example.invalid/a) and "
        "mailto:a@b.invalid <3 & @oncall")


@given(st.text(alphabet=st.sampled_from("ab &;<>#@!|lgtamp"), max_size=40)
       .filter(lambda t: "<" not in t))
def test_escaped_text_reads_back_as_written(text: str) -> None:
    escaped = escape_outgoing(text)
    assert ">" not in escaped
    assert render_mentions(escaped, {}) == text


def test_deliberate_markup_survives_escaping() -> None:
    text = "<@U1> & <#C1> & <!here> & <http://127.0.0.1/a|x> but not <b>"
    # A broadcast is the operator's to send (`broadcast=True`); from anyone else it is inert.
    assert escape_outgoing(text, broadcast=True) == (
        "<@U1> &amp; <#C1> &amp; <!here> &amp; <http://127.0.0.1/a|x> but not &lt;b&gt;")
    assert escape_outgoing(text) == (
        "<@U1> &amp; <#C1> &amp; &lt;!here&gt; &amp; <http://127.0.0.1/a|x> but not &lt;b&gt;")


def test_thread_parent_and_replies_map_to_the_documented_conversations() -> None:
    assert conversation_id(team_id="T", channel_id="C", ts="1.0", thread_ts=None) == "slack:T:C"
    assert conversation_id(team_id="T", channel_id="C", ts="1.0", thread_ts="1.0") == "slack:T:C"
    assert conversation_id(team_id="T", channel_id="C", ts="2.0", thread_ts="1.0") == (
        "slack:T:C:1.0")


def test_joins_and_other_bookkeeping_subtypes_are_not_turns() -> None:
    for subtype in ("channel_join", "channel_topic", "message_replied", "channel_leave"):
        event = {"type": "message", "subtype": subtype, "channel": "C", "ts": "1.0",
                 "user": "U1", "text": "joined"}
        assert classify(event, team_id="T", own_ids=frozenset({"U0BOT"}),
                        allow_bots=True) is None
