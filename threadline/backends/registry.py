"""The backends this installation knows, by the scheme of the store URL.

Built-in backends are listed below; a third-party package adds one with an entry point in the
`threadline.backends` group, named after its URL scheme, pointing at its `BackendPlug`:

    [project.entry-points."threadline.backends"]
    redis = "threadline_redis:BACKEND"

A backend's module is imported only when a store URL uses its scheme. `sqlite+aiosqlite://`
and `postgresql+asyncpg://` name a driver after the `+`; the scheme before it picks the backend.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from threadline.backends.base import BackendPlug
from threadline.errors import ConfigError
from threadline.plugs import load_plug, plug_references

ENTRY_POINT_GROUP = "threadline.backends"
DEFAULT_STORE_URL = "sqlite:///threadline.db"
BUILT_IN = {
    "sqlite": "threadline.backends.sql:BACKEND",
    "postgresql": "threadline.backends.sql:BACKEND",
    "memory": "threadline.backends.memory:BACKEND",
}
_EXPECTED = "sqlite:///PATH, postgresql+asyncpg://USER@HOST/DB or memory://"


def _references() -> dict[str, str]:
    """scheme -> `module:attribute`; a built-in scheme cannot be taken over by a plug-in."""
    return plug_references(ENTRY_POINT_GROUP, BUILT_IN)


def backend_schemes() -> list[str]:
    """Every URL scheme a `store.url` may use."""
    return list(_references())


def scheme_of(url: str) -> str:
    """The scheme that picks the backend: `sqlite` for `sqlite+aiosqlite:///x.db`."""
    return urlsplit(url).scheme.partition("+")[0].lower()


def plug_for_scheme(scheme: str) -> BackendPlug:
    """The plug registered for a scheme; a `ConfigError` says what to do if none."""
    references = _references()
    if scheme not in references:
        raise ConfigError(f"no backend serves store URLs of scheme {scheme!r}; use {_EXPECTED} "
                          f"(a third-party backend registers its scheme under the "
                          f"{ENTRY_POINT_GROUP!r} entry point group)")
    try:
        plug = load_plug(references[scheme])
    except ImportError as exc:
        raise ConfigError(f"the backend for {scheme!r} store URLs cannot be loaded: {exc}; "
                          "install its dependencies") from exc
    if not isinstance(plug, BackendPlug) or scheme not in plug.schemes:
        raise ConfigError(f"{references[scheme]!r} is not a BackendPlug serving {scheme!r}")
    return plug


def backend_for(url: str) -> BackendPlug:
    """The backend that serves a store URL, its URL checked (`ConfigError` if it is wrong)."""
    plug = plug_for_scheme(scheme_of(url))
    plug.check_url(url)
    return plug

