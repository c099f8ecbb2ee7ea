"""Platform identities as operators type them, checked before anything is linked.

An identity names one account: `slack:TEAM:USER` (Slack user ids are unique per team),
`telegram:USER`, `discord:USER`, `matrix:@USER:SERVER`, `local:NAME`. It is what
`threadline.history.speakers` derives from a stored turn, so a linked identity finds that
account's turns.
"""

from __future__ import annotations

from threadline.errors import ConfigError
from threadline.history.platform_ids import id_parts
from threadline.history.speakers import WORKSPACE_SCOPED_USERS


def parse_identity(text: str) -> str:
    """The identity as stored; a ConfigError saying the expected shape when it is not one."""
    identity = text.strip()
    platform, *parts = id_parts(identity)
    wanted = 2 if platform in WORKSPACE_SCOPED_USERS else 1
    if not platform or len(parts) != wanted or not all(parts):
        shape = (f"{platform}:TEAM:USER" if platform in WORKSPACE_SCOPED_USERS
                 else f"{platform}:USER" if parts else "PLATFORM:USER")
        raise ConfigError(
            f"{text!r} is not a platform identity; write {shape} (for example slack:T123:U456, "
            "telegram:456, discord:789, matrix:@alice:example.org)")
    return identity
