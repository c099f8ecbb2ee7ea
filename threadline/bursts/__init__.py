"""Bursts: several messages of one person in a row, answered by one reply (see `stage`)."""
