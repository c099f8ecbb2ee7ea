"""A first run as the README shows it: init, check, then `threadline run` in a terminal.

The run happens in a pseudo-terminal, as when a person types into it: the starter config's
local channel reads the terminal, a typed line is answered on screen and stored, and Ctrl-D
leaves cleanly. Piped or closed input (a service) is not read unless asked for.
"""

from __future__ import annotations

import asyncio
import os
import pty
import select
import subprocess
import time
from pathlib import Path

from tests.cli.helpers import THREADLINE
from tests.launch import Done, run, spawn
from threadline.backends.sql.store import SqlConversationStore


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


def threadline(*argv: str, cwd: Path) -> Done:
    return run(*argv, cwd=cwd, env=environment())


class Terminal:
    """`threadline ARGV` on a pseudo-terminal: what it printed, and a keyboard."""

    def __init__(self, *argv: str, cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen([str(THREADLINE), *argv], cwd=cwd, env=environment(),
                                        stdin=slave, stdout=slave, stderr=slave,
                                        start_new_session=True)
        os.close(slave)
        self.screen = ""

    def read_until(self, text: str, *, after: int = 0, timeout: float = 30) -> str:
        """Read until `text` is on screen (at or after position `after`)."""
        deadline = time.monotonic() + timeout
        while text not in self.screen[after:]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"waited {timeout} s for {text!r}; screen:\n{self.screen}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.2))
            if ready:
                try:
                    self.screen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the process closed the terminal
                    if text not in self.screen[after:]:
                        raise AssertionError(f"no {text!r} before exit:\n{self.screen}") from None
        return self.screen

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self) -> int:
        try:
            return self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            os.close(self.master)


def stored_turns(folder: Path) -> list[tuple[str, str]]:
    async def read() -> list[tuple[str, str]]:
        async with SqlConversationStore(f"sqlite+aiosqlite:///{folder / 'threadline.db'}") as s:
            return [(m.participant.id, m.content) for m in await s.get("local:main")]

    return asyncio.run(read())


def test_init_check_run_and_a_typed_line_is_answered_and_stored(tmp_path: Path) -> None:
    assert threadline("init", cwd=tmp_path).returncode == 0
    config = tmp_path / "threadline.yaml"  # the default ops port may be a running bot's
    config.write_text(config.read_text().replace("port: 9108", "port: 0"))
    check = threadline("check", "threadline.yaml", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert "ok    model: no ANTHROPIC_API_KEY: agents will answer with the offline model" \
        in check.stdout

    terminal = Terminal("run", "threadline.yaml", cwd=tmp_path)
    try:
        terminal.read_until("Leave with Ctrl-D (or Ctrl-C).")
        terminal.read_until("you> ")
        terminal.type("@support hello, I use the Pro plan\n")
        screen = terminal.read_until('support> [offline model] I read 1 prompt turns. The newest '
                                     'message says: "support hello, I use the Pro plan"')
        # Ready for the next line (the prompt may have come in the same read as the reply).
        terminal.read_until("you> ", after=screen.index("support> [offline model]"), timeout=10)
        terminal.type("\x04")  # Ctrl-D
        assert terminal.close() == 0, terminal.screen
    finally:
        if terminal.process.poll() is None:
            terminal.process.kill()
    assert "Talk to @support here, for example: @support hello." in terminal.screen
    assert "Traceback" not in terminal.screen
    assert stored_turns(tmp_path) == [
        ("you", "@support hello, I use the Pro plan"),
        ("support", '[offline model] I read 1 prompt turns. The newest message says: '
                    '"support hello, I use the Pro plan"')]  # a quote addresses nobody


async def test_a_service_without_a_terminal_reads_nothing(tmp_path: Path) -> None:
    assert threadline("init", cwd=tmp_path).returncode == 0
    config = tmp_path / "threadline.yaml"
    config.write_text(config.read_text().replace("port: 9108", "port: 0"))
    # A line waits on a pipe: `stdin: auto` leaves it alone, and so does --no-input.
    for extra in ((), ("--no-input",)):
        process = await spawn("run", "threadline.yaml", *extra, cwd=tmp_path,
                              env=environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        assert process.stdin is not None and process.stderr is not None
        process.stdin.write(b"@support are you reading this?\n")
        await process.stdin.drain()
        async with asyncio.timeout(60):
            while b"running 1 channel(s)" not in await process.stderr.readline():
                assert process.returncode is None, "threadline exited early"
        process.terminate()
        async with asyncio.timeout(30):
            out, _ = await process.communicate()
        assert process.returncode == 0
        assert b"support>" not in out
    assert await asyncio.to_thread(stored_turns, tmp_path) == []
