"""People: platform identities linked into persons, their memory, export and erasure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.people.directory import PeopleDirectory, Person
    from threadline.people.identities import parse_identity
    from threadline.people.memory import person_memory_for

__all__ = ["PeopleDirectory", "Person", "parse_identity", "person_memory_for"]

__getattr__ = lazy_exports(__name__, {
    "PeopleDirectory": "threadline.people.directory",
    "Person": "threadline.people.directory",
    "parse_identity": "threadline.people.identities",
    "person_memory_for": "threadline.people.memory",
})
