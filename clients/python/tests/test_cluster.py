"""Several hearthd nodes over one PostgreSQL database (``hearthd --postgres``): a client given every node's
address moves to another node when its node dies, catches up with the seq it has seen there, and its
listener resumes without a gap or a duplicate. Needs ``HEARTH_TEST_POSTGRES`` (``make test`` sets it)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import unittest
import uuid

import hearth

from .support import Daemon

DSN = os.environ.get("HEARTH_TEST_POSTGRES", "")


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports: all held at once while they are picked, so none is picked twice."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


class ClusterClientTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        if not DSN:
            self.skipTest("HEARTH_TEST_POSTGRES is not set (make test starts a PostgreSQL cluster and sets it)")
        schema = "py_" + uuid.uuid4().hex[:12]
        self.ports = free_ports(3)
        self.nodes = []
        try:
            for i, port in enumerate(self.ports):
                d = Daemon("--postgres", DSN, "--postgres-schema", schema, "--port", str(port),
                           "--advertise", f"127.0.0.1:{port}", "--node-name", f"n{i}", "--lease-ms", "1500")
                self.nodes.append(d.start())
        except BaseException:
            # asyncTearDown does not run after a failed set-up: the nodes already started must not outlive it.
            for d in self.nodes:
                d.stop()
            raise

    async def asyncTearDown(self) -> None:
        for d in getattr(self, "nodes", []):
            d.stop()

    async def test_a_client_moves_to_another_node_and_its_listener_resumes(self) -> None:
        addresses = [f"127.0.0.1:{p}" for p in self.ports]
        db = await hearth.connect(addresses=addresses, reconnect=True, reconnect_delay=0.01)
        try:
            for i in range(10):
                await db.set(f"m/d{i}", {"n": i})
            listener = db.listen_query("m", order_by=[("n", "desc")], limit=5)
            snapshots = listener.__aiter__()
            first = await snapshots.__anext__()
            self.assertEqual([d.id for d in first.docs], ["d9", "d8", "d7", "d6", "d5"])
            seen = db.seen_seq
            self.assertGreaterEqual(seen, 10)

            # The node the client is on dies; the client goes to the next address.
            where = (db.host, db.port)
            victim = self.nodes[self.ports.index(db.port)]
            assert victim.proc is not None
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
            wrote = None
            for attempt in range(200):   # writes fail until the client is on a live node (and one commits)
                try:
                    wrote = await db.set("m/d20", {"n": 20})
                    break
                except (hearth.HearthConnectionError, hearth.HearthError):
                    await asyncio.sleep(0.05)
            self.assertIsNotNone(wrote, "no write succeeded after the node died")
            self.assertNotEqual((db.host, db.port), where)
            # Read-your-writes on the new node, and the listener resumed there.
            doc = await db.get("m/d20")
            self.assertEqual(doc.data if doc else None, {"n": 20})
            latest = first
            while not any(d.id == "d20" for d in latest.docs):
                latest = await asyncio.wait_for(snapshots.__anext__(), 30)
            self.assertEqual([d.id for d in latest.docs], ["d20", "d9", "d8", "d7", "d6"])
            self.assertGreater(latest.seq, seen)
            self.assertGreaterEqual(db.seen_seq, latest.seq)
            result = await db.query("m", order_by=[("n", "desc")], limit=5)
            self.assertEqual([d.id for d in result], [d.id for d in latest.docs])
        finally:
            await db.close()

    async def test_addresses_are_checked_up_front(self) -> None:
        with self.assertRaises(ValueError):
            hearth.connect(addresses=["127.0.0.1"])
        with self.assertRaises(ValueError):
            hearth.connect(addresses=[])
        with self.assertRaises(ValueError):
            hearth.connect(addresses=["127.0.0.1:70000"])
