"""Feedback on agents' replies: a thumbs up or down (and a reason) under each reply, kept per
person and reply (`votes`), offered as each platform's own buttons (`feature`)."""
