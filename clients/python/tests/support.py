"""Test support: a real hearthd on an ephemeral port with a temporary data dir, and a cuttable TCP proxy.

The daemon binary is $HEARTHD_BIN, else ./.build/debug/hearthd (relative to the current directory, then
to the repository root).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import uuid

import hearth

_REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def hearthd_binary() -> str:
    candidates = [os.environ.get("HEARTHD_BIN"), os.path.join(".build", "debug", "hearthd"),
                  os.path.join(_REPO_ROOT, ".build", "debug", "hearthd")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise RuntimeError(f"hearthd binary not found (tried {[c for c in candidates if c]}); "
                       "build it with `swift build` or set HEARTHD_BIN")


class Daemon:
    """A hearthd process; ``port`` is known once :meth:`start` returns."""

    def __init__(self, *extra_args: str) -> None:
        self.extra_args = list(extra_args)
        self.data_dir = tempfile.mkdtemp(prefix="hearth-py-")
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.log: list[str] = []

    def start(self, timeout: float = 15.0) -> "Daemon":
        self.proc = subprocess.Popen([hearthd_binary(), "--host", "127.0.0.1", "--port", "0",
                                      "--data-dir", self.data_dir, *self.extra_args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        found = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line.rstrip("\n"))
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
                if m and not found.is_set():
                    self.port = int(m.group(1))
                    found.set()
            found.set()

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.05):
            if time.monotonic() > deadline:
                break
        if not self.port:
            self.stop()
            raise RuntimeError("hearthd did not start listening; log:\n" + "\n".join(self.log))
        return self

    def restart(self) -> "Daemon":
        """Stops the process and starts a new one on the same data dir (the port changes)."""
        self._terminate()
        self.port = 0
        return self.start()

    def stop(self) -> None:
        self._terminate()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def _terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr is not None:
            self._pump.join(5)
            self.proc.stderr.close()
        self.proc = None


_daemon: Daemon | None = None


def start_daemon() -> Daemon:
    """Starts the module's daemon (call from setUpModule)."""
    global _daemon
    _daemon = Daemon().start()
    return _daemon


def stop_daemon() -> None:
    """Stops it (call from tearDownModule)."""
    global _daemon
    if _daemon is not None:
        _daemon.stop()
        _daemon = None


def daemon() -> Daemon:
    assert _daemon is not None, "setUpModule must call start_daemon()"
    return _daemon


def unique(prefix: str = "c") -> str:
    """A collection name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


class HearthTestCase(unittest.IsolatedAsyncioTestCase):
    """Each test gets ``self.db``, a client connected to the module's daemon, and ``self.coll``, a fresh
    collection name."""

    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().slow_callback_duration = 5.0  # debug-mode warnings for big payloads
        self.db = await hearth.connect(port=daemon().port)
        self.coll = unique()

    async def asyncTearDown(self) -> None:
        await self.db.close()


async def listen_supported(port: int) -> bool:
    """True when the daemon knows the ``listen`` op (probed on a connection of its own)."""
    async with hearth.connect(port=port) as db:
        try:
            r = await db.request("listen", path="probe/doc")
        except hearth.HearthError as e:
            if e.code == "INVALID_ARGUMENT" and 'unknown op "listen"' in e.message:
                return False
            raise
        await db.request("unlisten", sub=r["sub"])
        return True


class Proxy:
    """A TCP proxy to the daemon whose connections can be cut (:meth:`drop`) and refused (:meth:`block`),
    to test connection loss and resume. ``target_port`` may be changed (new connections go there), and
    ``requests`` records every request line the clients sent through it (parsed)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.blocked = False
        self.requests: list[dict] = []
        self._server: asyncio.AbstractServer | None = None
        self._links: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> "Proxy":
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.blocked:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._links.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: bool) -> None:
            partial = b""
            try:
                while data := await src.read(65536):
                    if record:
                        *lines, partial = (partial + data).split(b"\n")
                        self.requests.extend(json.loads(line) for line in lines if line.strip())
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        for t in (asyncio.create_task(pipe(reader, up_writer, True)),
                  asyncio.create_task(pipe(up_reader, writer, False))):
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    def drop(self) -> None:
        """Cuts every proxied connection at once (both sides see a reset)."""
        for w in list(self._links):
            w.transport.abort()
        self._links.clear()

    def block(self) -> None:
        self.blocked = True

    def unblock(self) -> None:
        self.blocked = False

    async def close(self) -> None:
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
