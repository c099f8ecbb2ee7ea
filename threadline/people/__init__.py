"""People: platform identities linked into persons, their memory, export and erasure."""

from threadline.people.directory import PeopleDirectory, Person
from threadline.people.identities import parse_identity
from threadline.people.memory import person_memory_for

__all__ = ["PeopleDirectory", "Person", "parse_identity", "person_memory_for"]
