"""Ambient agents: listening in a room, and speaking only when they decide to (`stage`)."""
