"""Where a platform's files may be fetched from, and the one fetcher that keeps to it.

A file URL comes from the platform's event, and an event can be forged or a platform proxied,
so the URL alone never decides where the bot connects or where its credential goes:
- each platform declares its own file hosts (`FileHosts`: Slack `files.slack.com`, Telegram
  the host of its file route); an operator widens them per channel (`file_hosts`) for a proxy
  or a self-hosted server, naming `host` or `host:port` (`*.example.com` for subdomains);
- a host the platform declares is never fetched from on a loopback, link-local, private or
  otherwise non-public address; a host the operator named may be (a local Bot API server);
- whatever was configured, this process's own ports (`threadline.listening.own_ports`: the ops
  server and console, which trust loopback callers, and the channels' endpoints) are never
  fetched from on a local address;
- the address checked is the address connected to (the resolver below refuses, so a name that
  resolves elsewhere on the second look does not get through);
- redirects are followed here, one hop at a time, each hop checked again; the credential goes
  only to the host the first URL named;
- the body is streamed and the download stops at the limit: a declared size is not trusted.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

from threadline.errors import ConfigError, FileRefusedError, FileTooLargeError
from threadline.listening import own_ports

log = structlog.get_logger("threadline.files")

MAX_REDIRECTS = 5
FETCH_TIMEOUT_SECONDS = 60.0
_CHUNK = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class HostRule:
    """One allowed file host: `files.slack.com`, `*.example.com`, or `127.0.0.1:8081`."""

    host: str
    port: int | None
    local_ok: bool  # named by the operator: may resolve to a loopback or private address

    @classmethod
    def parse(cls, entry: str, *, local_ok: bool, setting: str) -> HostRule:
        text = entry.strip().lower()
        parsed = URL(f"//{text}") if text and not set("/ \t@") & set(text) else URL()
        if not parsed.host:
            raise ConfigError(f"{setting}: {entry!r} is not a host; write host or host:port "
                              "(files.example.com, 10.0.0.5:8081, *.example.com)")
        return cls(host=parsed.host, port=parsed.explicit_port, local_ok=local_ok)

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host


@dataclass(frozen=True, slots=True)
class FileHosts:
    """The hosts one channel fetches its platform's files from (see the module docstring)."""

    channel: str
    rules: tuple[HostRule, ...]
    setting: str  # the setting that widens them, named in refusals

    @classmethod
    def of(cls, *, channel: str, platform_hosts: Sequence[str], configured: Sequence[str] = (),
           setting: str) -> FileHosts:
        """The platform's own hosts plus the ones the operator named for this channel."""
        rules = ([HostRule.parse(h, local_ok=False, setting=setting) for h in platform_hosts]
                 + [HostRule.parse(h, local_ok=True, setting=setting) for h in configured])
        return cls(channel=channel, rules=tuple(rules), setting=setting)

    def rule_for(self, url: URL) -> HostRule:
        """The rule that lets `url` be fetched; `FileRefusedError` when none does."""
        host, port = (url.host or "").lower(), url.port or _DEFAULT_PORTS.get(url.scheme, 0)
        if url.scheme not in _DEFAULT_PORTS:
            raise self._refused(url, f"its scheme {url.scheme!r} is not http(s)")
        for rule in self.rules:
            if rule.matches(host, port):
                return rule
        raise self._refused(url, f"{host}:{port} is not one of its file hosts")

    def check_address(self, url: URL, rule: HostRule, address: str) -> None:
        """Refuse connecting to `address` for `url` (see the module docstring)."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if ip.is_global:
            return
        port = url.port or _DEFAULT_PORTS.get(url.scheme, 0)
        if port in own_ports():
            raise self._refused(url, f"it resolves to {ip}, port {port}, which this process "
                                     "serves itself")
        if not rule.local_ok:
            raise self._refused(url, f"it resolves to {ip}, a loopback, link-local or private "
                                     "address")

    def _refused(self, url: URL, why: str) -> FileRefusedError:
        return FileRefusedError(
            f"channel {self.channel!r} does not fetch files from {url.host!r}: {why}; if this "
            f"is your own proxy or file server, name it in {self.setting}")


class _CheckedResolver(AbstractResolver):
    """Resolves with aiohttp's resolver, then refuses the addresses `FileHosts` refuses."""

    def __init__(self, hosts: FileHosts) -> None:
        self._hosts = hosts
        self._inner = DefaultResolver()
        self.url = URL()
        self.rule: HostRule | None = None

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        assert self.rule is not None  # set for each hop before it is requested
        for result in found:
            self._hosts.check_address(self.url, self.rule, result["host"])
        return found

    async def close(self) -> None:
        await self._inner.close()


async def fetch_file(url: str, *, hosts: FileHosts, limit: int,
                     credential: Mapping[str, str] | None = None) -> bytes:
    """The bytes at `url`, fetched within `hosts`, at most `limit` of them.

    `credential` (headers such as Authorization) goes only to the host `url` names, never to a
    host a redirect leads to. Raises `FileRefusedError` before connecting anywhere refused and
    `FileTooLargeError` as soon as the body passes `limit`.
    """
    resolver = _CheckedResolver(hosts)
    first = current = URL(url)
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
    async with aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_SECONDS)) as session:
        for _hop in range(MAX_REDIRECTS + 1):
            rule = hosts.rule_for(current)
            resolver.url, resolver.rule = current, rule
            if _is_ip(current.host or ""):  # aiohttp does not resolve an address
                hosts.check_address(current, rule, current.host or "")
            same_host = (current.host, current.port) == (first.host, first.port)
            headers: dict[str, Any] = dict(credential or {}) if same_host else {}
            async with session.get(current, headers=headers, allow_redirects=False) as response:
                if response.status in _REDIRECTS and "Location" in response.headers:
                    current = current.join(URL(response.headers["Location"]))
                    continue
                response.raise_for_status()
                return await _read_within(response, limit)
    raise FileRefusedError(f"channel {hosts.channel!r}: the file URL redirected more than "
                           f"{MAX_REDIRECTS} times")


async def put_file(url: str, data: bytes, *, hosts: FileHosts,
                   headers: Mapping[str, str]) -> None:
    """PUT `data` to `url` (a platform's upload URL, which names where the bytes go), within
    `hosts` and under the same address checks as a fetch; a redirect is not followed (the
    bytes go only where the URL said). Raises `FileRefusedError` before connecting anywhere
    refused, `aiohttp.ClientError` when the upload fails."""
    resolver = _CheckedResolver(hosts)
    target = URL(url)
    rule = hosts.rule_for(target)
    resolver.url, resolver.rule = target, rule
    if _is_ip(target.host or ""):
        hosts.check_address(target, rule, target.host or "")
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
    async with aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_SECONDS)) as session, \
            session.put(target, data=data, headers=dict(headers),
                        allow_redirects=False) as response:
        if not 200 <= response.status < 300:  # a redirect too: the bytes go nowhere else
            raise aiohttp.ClientResponseError(
                response.request_info, response.history, status=response.status,
                message=f"the upload was answered {response.status} {response.reason}")


async def _read_within(response: aiohttp.ClientResponse, limit: int) -> bytes:
    body = bytearray()
    async for chunk in response.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > limit:
            raise FileTooLargeError(f"the download passed the limit of {limit:,} bytes and "
                                    "was stopped there")
    return bytes(body)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
