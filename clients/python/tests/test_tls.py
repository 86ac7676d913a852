"""TLS against real hearthd daemons: ``ssl=`` takes an :class:`ssl.SSLContext` as asyncio does; the
certificate and host name are verified; client certificates; plain text and TLS on the wrong port."""

from __future__ import annotations

import asyncio
import ssl
import unittest

import hearth

from .support import Daemon, unique
from .tls_support import Certificates

certs: Certificates
daemons: dict[str, Daemon] = {}


def setUpModule() -> None:
    global certs
    certs = Certificates()
    daemons["tls"] = Daemon(*certs.server_args()).start()
    daemons["mutual"] = Daemon(*certs.server_args(client_ca=True)).start()
    daemons["expired"] = Daemon(*certs.server_args("expired")).start()
    daemons["wronghost"] = Daemon(*certs.server_args("wronghost")).start()
    daemons["plain"] = Daemon().start()


def tearDownModule() -> None:
    for d in daemons.values():
        d.stop()
    certs.remove()


def trusting(client_cert: bool = False, ca: str = "ca.pem") -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=certs.path(ca))
    if client_cert:
        context.load_cert_chain(certs.path("client.pem"), certs.path("client.key"))
    return context


class TLSTest(unittest.IsolatedAsyncioTestCase):
    async def test_gets_writes_and_a_listener_over_verified_tls(self) -> None:
        coll = unique()
        async with hearth.connect(port=daemons["tls"].port, ssl=trusting()) as db:
            listener = db.listen_query(coll)
            first = await asyncio.wait_for(listener.next(), 5)
            self.assertEqual(first.size, 0)
            await db.set(f"{coll}/a", {"n": 1})
            self.assertEqual((await db.get(f"{coll}/a")).data, {"n": 1})
            snapshot = await asyncio.wait_for(listener.next(), 5)
            self.assertEqual([d.data for d in snapshot.docs], [{"n": 1}])
            await listener.close()

    async def test_host_name_localhost_verifies_too(self) -> None:
        async with hearth.connect("localhost", daemons["tls"].port, ssl=trusting()) as db:
            self.assertIn("seq", await db.request("ping"))

    async def test_untrusted_ca_is_refused(self) -> None:
        with self.assertRaises(ssl.SSLCertVerificationError) as cm:
            await hearth.connect(port=daemons["tls"].port, ssl=trusting(ca="other-ca.pem"))
        self.assertIn("unable to get local issuer certificate", str(cm.exception))

    async def test_expired_certificate_is_refused(self) -> None:
        with self.assertRaises(ssl.SSLCertVerificationError) as cm:
            await hearth.connect(port=daemons["expired"].port, ssl=trusting())
        self.assertIn("certificate has expired", str(cm.exception))

    async def test_host_name_mismatch_is_refused(self) -> None:
        with self.assertRaises(ssl.SSLCertVerificationError) as cm:
            await hearth.connect(port=daemons["wronghost"].port, ssl=trusting())
        self.assertIn("mismatch", str(cm.exception))
        # The same certificate verifies under the name it carries.
        async with hearth.connect(port=daemons["wronghost"].port, ssl=trusting(), server_hostname="wrong.example") as db:
            self.assertIn("seq", await db.request("ping"))

    async def test_client_certificate_required(self) -> None:
        async with hearth.connect(port=daemons["mutual"].port, ssl=trusting(client_cert=True)) as db:
            self.assertIn("seq", await db.request("ping"))
        # Without one, TLS 1.3 completes the client's side of the handshake; the daemon's alert ends the
        # connection before the first answer.
        db = await hearth.connect(port=daemons["mutual"].port, ssl=trusting())
        try:
            with self.assertRaises(hearth.HearthConnectionError) as cm:
                await db.request("ping")
            self.assertIn("CERTIFICATE_REQUIRED", str(cm.exception).upper().replace(" ", "_"))
        finally:
            await db.close()

    async def test_plain_text_to_a_tls_port_gets_a_clear_error(self) -> None:
        async with hearth.connect(port=daemons["tls"].port) as db:
            with self.assertRaises(hearth.HearthError) as cm:
                await db.request("ping")
        self.assertEqual(cm.exception.code, "UNAVAILABLE")
        self.assertIn("this port speaks TLS", cm.exception.message)

    async def test_tls_to_a_plain_port_gets_a_clear_error(self) -> None:
        with self.assertRaises(hearth.HearthConnectionError) as cm:
            await hearth.connect(port=daemons["plain"].port, ssl=trusting())
        self.assertIn("answered in plain text", str(cm.exception))

    async def test_reconnect_keeps_tls(self) -> None:
        db = await hearth.connect(port=daemons["tls"].port, ssl=trusting(), reconnect=True)
        try:
            db.drop_connection()
            self.assertIn("seq", await asyncio.wait_for(db.request("ping"), 10))
            self.assertEqual(db.reconnects, 1)
        finally:
            await db.close()


if __name__ == "__main__":
    unittest.main()
