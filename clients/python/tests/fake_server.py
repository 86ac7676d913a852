"""A scripted stand-in for hearthd, to test the client's listener machinery line by line.

Each accepted connection's request lines arrive on ``requests`` as ``(FakeLink, message)``; the test answers
with ``link.send(...)`` and can cut the link (``link.drop()``). ``link.lines`` keeps the raw lines received
(bytes, without the newline), for tests that check exactly what the client sent.
"""

from __future__ import annotations

import asyncio
import json


class FakeLink:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.lines: list[bytes] = []

    def send(self, *messages: dict) -> None:
        for m in messages:
            self.writer.write(json.dumps(m).encode() + b"\n")

    def reply(self, request: dict, **fields) -> None:
        self.send({"id": request["id"], "ok": True, **fields})

    def drop(self) -> None:
        self.writer.transport.abort()


class FakeServer:
    def __init__(self) -> None:
        self.requests: asyncio.Queue = asyncio.Queue()
        self.links: list[FakeLink] = []
        self.port = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> "FakeServer":
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = FakeLink(reader, writer)
        self.links.append(link)
        try:
            while line := await reader.readline():
                link.lines.append(line.rstrip(b"\n"))
                await self.requests.put((link, json.loads(line)))
        except (ConnectionError, OSError):
            pass

    async def next_request(self, op: str | None = None, timeout: float = 5.0) -> tuple[FakeLink, dict]:
        """The next request (skipping ``ping``s unless asked for), failing after ``timeout`` seconds."""
        while True:
            link, message = await asyncio.wait_for(self.requests.get(), timeout)
            if op is None or message.get("op") == op:
                return link, message

    async def close(self) -> None:
        for link in self.links:
            link.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
