"""The connection-state signal: what a listener's application learns while the server cannot be reached."""

import asyncio
import socket

import hearth

from .support import HearthTestCase, daemon, start_daemon, stop_daemon


def setUpModule() -> None:
    start_daemon()


def tearDownModule() -> None:
    stop_daemon()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ConnectionStateTest(HearthTestCase):
    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        self.changed = asyncio.Event()      # set by the state listener on every report

    async def wait_for(self, states: list[tuple[str, str | None]], predicate, timeout: float = 10.0) -> None:
        """Until a reported state matches: woken by each report (no polling)."""
        async def matched() -> None:
            while not any(predicate(s) for s in states):
                self.changed.clear()
                await self.changed.wait()
        try:
            await asyncio.wait_for(matched(), timeout)
        except asyncio.TimeoutError:
            self.fail(f"no matching state in {states}")

    def record(self, states: list[tuple[str, str | None]]):
        def on_state(state: str, reason: str | None) -> None:
            states.append((state, reason))
            self.changed.set()
        return on_state

    async def test_a_listener_on_an_unreachable_server_is_reported_then_resumes(self) -> None:
        c = self.coll
        db = await hearth.connect(port=daemon().port, reconnect=True, reconnect_delay=0.02, max_reconnect_delay=0.1)
        self.addAsyncCleanup(db.close)
        states: list[tuple[str, str | None]] = []
        remove = db.add_connection_state_listener(self.record(states))
        await self.wait_for(states, lambda s: s == ("connected", None))
        self.assertEqual(db.connection_state, ("connected", None))
        listener = db.listen_query(c)
        first = await asyncio.wait_for(listener.next(), 5)
        self.assertEqual(first.docs, [])

        gone = closed_port()
        db.port = gone
        db.drop_connection()
        await self.wait_for(states, lambda s: s == ("disconnected", "connection lost"))
        await self.wait_for(states, lambda s: s[0] == "disconnected" and f"cannot connect to 127.0.0.1:{gone}" in (s[1] or ""))
        failures = [s for s in states if s[1] and "cannot connect" in s[1]]
        self.assertEqual(len(failures), 1, f"a repeated failure is reported once: {states}")

        db.port = daemon().port
        await self.wait_for(states, lambda s: states[-1] == ("connected", None))
        writer = await hearth.connect(port=daemon().port)
        self.addAsyncCleanup(writer.close)
        await writer.set(f"{c}/a", {"v": 1})
        snap = await asyncio.wait_for(listener.next(), 5)
        self.assertEqual([ch.type for ch in snap.changes], ["added"], "the listener resumed")

        remove()
        count = len(states)
        await db.close()
        self.assertEqual(db.connection_state, ("disconnected", "closed"))
        self.assertEqual(len(states), count, "a removed listener is not called")
