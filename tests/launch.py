"""`threadline` as a real child process, forked from a process that imported it once.

A cold `threadline run` spends about 4.5 s of CPU before it serves, three quarters of it
importing (the Anthropic SDK alone 1.7 s, SQLAlchemy, the platform SDKs, the settings models);
a suite that starts a few hundred of them on two cores spends most of its time there. So each
pytest worker keeps one launcher: a process that has imported what `threadline run` imports and
then only forks. Each child it forks is an ordinary process of its own (its own pid, signals,
kill -9, exit code, files and sockets) that sets its working folder, environment, `sys.path`
and standard streams from the request and then runs `threadline.cli.main` on a fresh event
loop, as the console script would. What a fork cannot show is what happens while importing
(an import that fails, the SDKs loaded for a command that needs none): the tests of that
(`tests/cli/test_cli_starts_without_the_sdks.py`, the README's blocks, the library kept out of
its host's output, a terminal on a pty) start the command cold, as a user would, and so does
a launch whose `PYTHONPATH` holds a `sitecustomize.py` (a hook only a starting interpreter runs).

The launcher is started with the worker's environment (so it imports the code under test,
`PYTHONPATH` included), holds no thread and no event loop when it forks (it checks), reaps its
children and tells each client its child's exit code (negative: the signal that ended it), kills
a child whose client went away, and exits with everything it forked when its worker does (its
standard input closes).

    child = await spawn("run", str(config), cwd=folder, env=env, stderr=log_file)
    child.send_signal(signal.SIGKILL); await child.wait()
    done = run("check", cwd=folder, env=env)      # blocking, like subprocess.run
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

THREADLINE = Path(sys.executable).with_name("threadline")

# What `threadline run` and `check` import for the platforms, stores and providers the tests
# use. A module missing here is imported by the child itself (slower, not wrong).
PRELOADED = (
    "threadline.cli.main", "threadline.runtime", "threadline.config", "threadline.backends.sql",
    "alembic.command", "alembic.runtime.migration", "asyncpg", "aiosqlite",
    "threadline.agents.anthropic_provider", "threadline.agents.openai_provider", "anthropic",
    "openai", "threadline.channels.slack", "threadline.channels.telegram",
    "threadline.channels.discord", "threadline.channels.matrix", "threadline.channels.web",
    "threadline.channels.http", "threadline.channels.whatsapp", "threadline.channels.teams",
    "threadline.inspector.console", "threadline.features", "mcp", "tiktoken",
)
_HEADER = struct.Struct("!I")
Stream = int | IO[Any] | None


# -- the client, in the test's process -----------------------------------------------------


@dataclass(frozen=True)
class Done:
    """A finished `run`: as `subprocess.CompletedProcess`, text."""

    returncode: int
    stdout: str
    stderr: str


class Child:
    """A forked `threadline`, used as `asyncio.subprocess.Process` is."""

    def __init__(self, pid: int, status: socket.socket, pipes: dict[str, int]) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._status = status
        self._pipes = pipes
        self._ended = asyncio.get_running_loop().create_future()

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        for name in ("stdout", "stderr"):
            if name in self._pipes:
                reader = asyncio.StreamReader(limit=2**24)
                await loop.connect_read_pipe(lambda r=reader: asyncio.StreamReaderProtocol(r),
                                             os.fdopen(self._pipes[name], "rb", buffering=0))
                setattr(self, name, reader)
        if "stdin" in self._pipes:
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(self._pipes["stdin"], "wb", 0))
            self.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        """The exit code, when the launcher reaps the child."""
        reader, writer = await asyncio.open_unix_connection(sock=self._status)
        line = await reader.readline()
        writer.close()
        self.returncode = int(line) if line.strip() else -signal.SIGKILL
        self._ended.set_result(self.returncode)

    async def wait(self) -> int:
        return int(await asyncio.shield(self._ended))

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def communicate(self, input: bytes | None = None) -> tuple[bytes, bytes]:
        if self.stdin is not None:
            if input:
                self.stdin.write(input)
                await self.stdin.drain()
            self.stdin.close()

        async def read(stream: asyncio.StreamReader | None) -> bytes:
            return await stream.read() if stream is not None else b""

        out, err = await asyncio.gather(read(self.stdout), read(self.stderr))
        await self.wait()
        return out, err


async def spawn(*argv: str, cwd: Path | str, env: Mapping[str, str] | None = None,
                stdin: Stream = None, stdout: Stream = None, stderr: Stream = None) -> Child:
    """`threadline ARGV` forked by this worker's launcher, in `env` (this process's
    environment by default). Each stream as `asyncio.create_subprocess_exec` takes it: None
    (this process's own), `subprocess.PIPE`, `subprocess.DEVNULL`, or an open file or
    descriptor."""
    environment = os.environ if env is None else env
    if _needs_a_fresh_interpreter(environment):
        return await asyncio.create_subprocess_exec(  # type: ignore[return-value]
            str(THREADLINE), *argv, cwd=cwd, env=environment, stdin=stdin, stdout=stdout,
            stderr=stderr)
    ends: list[int] = []
    mine: dict[str, int] = {}
    to_close: list[int] = []
    for number, (name, stream) in enumerate((("stdin", stdin), ("stdout", stdout),
                                              ("stderr", stderr))):
        if stream is None:
            ends.append(number)
        elif stream == subprocess.PIPE:
            read_end, write_end = os.pipe()
            theirs, own = (read_end, write_end) if name == "stdin" else (write_end, read_end)
            mine[name] = own
            ends.append(theirs)
            to_close.append(theirs)
        elif stream == subprocess.DEVNULL:
            fd = os.open(os.devnull, os.O_RDWR)
            ends.append(fd)
            to_close.append(fd)
        else:
            ends.append(stream if isinstance(stream, int) else stream.fileno())
    try:
        pid, status = _launcher().fork(argv, cwd=cwd, env=environment, fds=ends)
    finally:
        for fd in to_close:
            os.close(fd)
    child = Child(pid, status, mine)
    await child._connect()
    return child


def run(*argv: str, cwd: Path | str, env: Mapping[str, str], input: str | None = None,
        timeout: float = 60) -> Done:
    """`threadline ARGV` forked by the launcher, waited for (blocking, as `subprocess.run`
    with `capture_output=True, text=True`); `subprocess.TimeoutExpired` after `timeout` s."""
    if _needs_a_fresh_interpreter(env):
        done = subprocess.run([str(THREADLINE), *argv], cwd=cwd, env=env, input=input,
                              capture_output=True, text=True, timeout=timeout, check=False)
        return Done(done.returncode, done.stdout, done.stderr)
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        given.write((input or "").encode())
        given.seek(0)
        pid, status = _launcher().fork(argv, cwd=cwd, env=env,
                                       fds=[given.fileno(), out.fileno(), err.fileno()])
        with status:
            status.settimeout(timeout)
            try:
                line = status.makefile("rb").readline()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired([str(THREADLINE), *argv], timeout) from None
        out.seek(0)
        err.seek(0)
        return Done(int(line) if line.strip() else -signal.SIGKILL,
                    out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def _needs_a_fresh_interpreter(environment: Mapping[str, str]) -> bool:
    """A `sitecustomize.py` on the child's path runs only when an interpreter starts."""
    return any(os.path.exists(os.path.join(folder, "sitecustomize.py"))
               for folder in _python_path(environment))


class _Launcher:
    """This worker's launcher process, and the socket it forks on request."""

    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="threadline-launcher-")
        self.path = os.path.join(self._folder, "socket")
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", self.path], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=dict(os.environ))
        self._ready = False

    def _wait_ready(self) -> None:
        if self._ready:
            return
        assert self.process.stdout is not None
        said = self.process.stdout.readline()
        if said.strip() != b"ready":
            raise RuntimeError(f"the test launcher did not start (exit {self.process.poll()}); "
                               f"run `python {__file__} --serve /tmp/s` to see why")
        self._ready = True

    def fork(self, argv: tuple[str, ...], *, cwd: Path | str, env: Mapping[str, str],
             fds: list[int]) -> tuple[int, socket.socket]:
        self._wait_ready()
        request = json.dumps({"argv": list(argv), "cwd": str(cwd), "env": dict(env)}).encode()
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.path)
        socket.send_fds(connection, [_HEADER.pack(len(request)) + request], fds)
        said = b""
        while not said.endswith(b"\n"):
            chunk = connection.recv(64)
            if not chunk:
                raise RuntimeError(f"the test launcher refused {argv}: {said!r}")
            said += chunk
        if not said.startswith(b"pid "):
            raise RuntimeError(f"the test launcher could not start {argv}: {said.decode()}")
        return int(said.split()[1]), connection


_running: _Launcher | None = None


def _launcher() -> _Launcher:
    global _running
    if _running is None or _running.process.poll() is not None:
        _running = _Launcher()
    return _running


def warm_up() -> None:
    """Start this worker's launcher now, so its imports overlap the first tests."""
    _launcher()


# -- the launcher, in its own process ------------------------------------------------------


def _serve(path: str) -> None:
    # As the console script: its own folder first on the path, not this file's.
    sys.path[0] = str(THREADLINE.parent)
    import gc
    import importlib
    import selectors
    import threading

    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from threadline.history.tokens import default_counter

    default_counter()
    gc.freeze()  # what the children inherit is never collected, so never copied by it
    if threading.active_count() != 1:
        raise SystemExit(f"imports started threads {threading.enumerate()}: forking is unsafe")
    base_path = [p for p in sys.path if p not in _python_path(os.environ)]

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    woken_read, woken_write = os.pipe()
    os.set_blocking(woken_write, False)
    signal.set_wakeup_fd(woken_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(woken_read, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                connection, _ = listener.accept()
                request, fds = _read_request(connection)
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    for fd in (woken_read, woken_write, listener.fileno(),
                               *(c.fileno() for c in children.values())):
                        os.close(fd)
                    try:
                        code: object = _become(request, fds, connection, base_path)
                    except SystemExit as ended:
                        code = ended.code
                    except BaseException:
                        traceback.print_exc()
                        code = 1
                    _exit(code)
                for fd in fds:
                    os.close(fd)
                connection.sendall(f"pid {pid}\n".encode())
                children[pid] = connection
                selector.register(connection, selectors.EVENT_READ, pid)
            elif key.fileobj == woken_read:
                with contextlib.suppress(BlockingIOError):
                    os.read(woken_read, 4096)
                _reap(children, selector)
            elif key.fileobj == sys.stdin.fileno():
                if not os.read(sys.stdin.fileno(), 4096):  # the worker is gone
                    for pid in children:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    os._exit(0)
            else:  # a client went away (or wrote): its child goes too
                with contextlib.suppress(ProcessLookupError):
                    os.kill(key.data, signal.SIGKILL)
                selector.unregister(key.fileobj)


def _read_request(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
        more = connection.recv(1 << 20)
        if not more:
            break
        data += more
    (size,) = _HEADER.unpack_from(data)
    return json.loads(data[_HEADER.size:_HEADER.size + size]), list(fds)


def _reap(children: dict[int, socket.socket], selector: Any) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is None:
            continue
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(connection)
        with contextlib.suppress(OSError):
            connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        connection.close()


def _become(request: dict[str, Any], fds: list[int], connection: socket.socket,
            base_path: list[str]) -> int:
    """In the forked child: take the request's place and streams, run the command."""
    import importlib

    connection.close()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:] = [base_path[0], *_python_path(os.environ), *base_path[1:]]
    importlib.invalidate_caches()
    sys.argv = [str(THREADLINE), *request["argv"]]
    time.tzset()
    from threadline.cli import main

    return main()


def _exit(code: object) -> None:
    """End the child as the interpreter would (exit functions, threads joined, streams
    flushed) without its last step: freeing every preloaded module one by one takes seconds."""
    import atexit
    import threading

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def _python_path(environment: Mapping[str, str]) -> list[str]:
    return [os.path.abspath(p) for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]


if __name__ == "__main__" and sys.argv[1:2] == ["--serve"]:
    _serve(sys.argv[2])
