"""Backfill: a bot that joins a conversation late reads what was said before it (`stage`)."""
