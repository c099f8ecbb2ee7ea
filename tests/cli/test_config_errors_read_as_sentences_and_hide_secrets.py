"""A config error is one sentence that reads as written (no "expected write ..., found ...",
no value said twice), and a value that came from the environment is shown as the
`${VARIABLE}` the file names, never as its value (it may be a password or a token)."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.config import load_settings
from threadline.errors import ConfigError

SECRET = "pw-s3cret-value"


def problem(tmp_path: Path, body: str) -> str:
    path = tmp_path / "threadline.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(path, env={"DATABASE_URL": f"mysql://bot:{SECRET}@db/x",
                                 "DATABASE_PASSWORD": SECRET, "HEADERS": SECRET})
    return str(raised.value).split(": ", 2)[2]  # after FILE:LINE: key


@pytest.mark.parametrize(("body", "said"), [
    ("agents:\n  a:\n    tools: [nocolon]\n",
     "'nocolon' is not a 'module:function' reference (for example tools:weather)"),
    ("spend:\n  timezone: Mars/Base\n",
     "unknown time zone 'Mars/Base'; write an IANA name such as UTC or Europe/Berlin"),
    ("tracing:\n  trace_url: https://tempo.example/\n",
     "write {trace_id} where the trace's id goes, such as https://tempo.example/trace/{trace_id}"),
    ("model:\n  max_tokens: lots\n", "expected a valid integer, found 'lots'"),
])
def test_each_problem_is_one_plain_sentence(tmp_path: Path, body: str, said: str) -> None:
    assert problem(tmp_path, body) == said


@pytest.mark.parametrize(("body", "shown"), [
    ("store:\n  url: ${DATABASE_URL}\n", "no backend serves store URLs of scheme 'mysql'"),
    ("store:\n  url: postgresql+asyncpg://bot:${DATABASE_PASSWORD}@db:port/x\n",
     "not a database URL this can read"),
    ("mcp_servers:\n  m:\n    url: http://127.0.0.1:1/mcp\n    headers: ${HEADERS}\n",
     "expected a valid dictionary, found ${HEADERS} (from the environment)"),
])
def test_a_value_from_the_environment_is_never_printed(tmp_path: Path, body: str,
                                                       shown: str) -> None:
    said = problem(tmp_path, body)
    assert SECRET not in said
    assert shown in said
