"""Ids whose parts carry a server after a colon (Matrix's `@user:server`, `!room:server`) are
read as whole parts wherever Threadline reads ids: workspaces, identities, conversation parts."""

from __future__ import annotations

import pytest

from threadline.channels.local import LocalChannel
from threadline.errors import ConfigError
from threadline.history.platform_ids import id_parts, platform_of
from threadline.history.speakers import author_identity, space_of, workspace_of
from threadline.people.identities import parse_identity


@pytest.mark.parametrize(("text", "parts"), [
    ("slack:T1:C2:1700.1", ("slack", "T1", "C2", "1700.1")),
    ("telegram:-1001:5", ("telegram", "-1001", "5")),
    ("matrix:@alice:example.org", ("matrix", "@alice:example.org")),
    ("matrix:!r:example.org:8448", ("matrix", "!r:example.org:8448")),
    ("matrix:!r:example.org:$ev", ("matrix", "!r:example.org", "$ev")),
    ("matrix:!r:example.org:$ev:old.example", ("matrix", "!r:example.org", "$ev:old.example")),
    ("matrix:!r:[::1]:8008:$ev", ("matrix", "!r:[::1]:8008", "$ev")),
    ("matrix:!HashOfV12:$ev", ("matrix", "!HashOfV12", "$ev")),
])
def test_id_parts_keep_a_sigil_id_with_its_server(text: str, parts: tuple[str, ...]) -> None:
    assert id_parts(text) == parts
    assert ":".join(id_parts(text)) == text
    assert platform_of(text) == parts[0]


def test_a_matrix_room_is_the_workspace_of_its_threads() -> None:
    assert workspace_of("matrix:!r:example.org:$ev") == "matrix:!r:example.org"
    assert workspace_of("matrix:!r:example.org") == "matrix:!r:example.org"
    assert workspace_of("slack:T1:C2:1700.1") == "slack:T1"  # unchanged
    assert space_of("matrix:!r:example.org:$ev", "thread") == "matrix:!r:example.org"
    assert author_identity("matrix:!r:example.org", "user",
                           "@ann:example.org") == "matrix:@ann:example.org"


def test_matrix_identities_are_accepted_and_wrong_shapes_refused() -> None:
    assert parse_identity(" matrix:@ann:example.org ") == "matrix:@ann:example.org"
    assert parse_identity("matrix:@ann:example.org:8448") == "matrix:@ann:example.org:8448"
    assert parse_identity("slack:T1:U2") == "slack:T1:U2"
    with pytest.raises(ConfigError, match=r"matrix:@alice:example\.org"):
        parse_identity("matrix:@ann:example.org:extra:parts")
    with pytest.raises(ConfigError, match="slack:TEAM:USER"):
        parse_identity("slack:U2")


def test_a_conversation_of_sigil_ids_names_its_room_and_thread() -> None:
    class RoomChannel(LocalChannel):
        channel_type = "matrix"

    channel = RoomChannel(name="rooms", room="r")
    meta = channel.metadata_for("matrix:!r:example.org:8448:$root")
    assert (meta.channel_id, meta.thread_id) == ("!r:example.org:8448", "$root")
    assert channel.metadata_for("matrix:!r:example.org").thread_id is None
