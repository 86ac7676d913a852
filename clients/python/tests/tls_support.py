"""Certificates for TLS tests, made with the ``openssl`` command at test time in a temporary directory (nothing
that expires is checked in): a CA, a server certificate for 127.0.0.1 and localhost, a client certificate, an
expired server certificate, one for another host name, and an unrelated CA."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile

_LOCAL_SAN = "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"


class Certificates:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="hearth-py-certs-")
        self._ca("ca", "/CN=Hearth Test CA")
        self._ca("other-ca", "/CN=Unrelated Test CA")
        self._issue("server", "/O=Hearth Tests/CN=localhost", "ca", _LOCAL_SAN)
        self._issue("client", "/O=Hearth Tests/CN=test-client", "ca", "extendedKeyUsage=clientAuth")
        self._issue("expired", "/O=Hearth Tests/CN=expired", "ca", _LOCAL_SAN, days=-1)
        self._issue("wronghost", "/O=Hearth Tests/CN=wrong.example", "ca", "subjectAltName=DNS:wrong.example")

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def server_args(self, name: str = "server", client_ca: bool = False) -> list[str]:
        """hearthd flags serving TLS with certificate ``name``."""
        args = ["--tls-cert", self.path(name + ".pem"), "--tls-key", self.path(name + ".key")]
        return args + (["--tls-client-ca", self.path("ca.pem")] if client_ca else [])

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def _ca(self, name: str, subject: str) -> None:
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", self.path(name + ".key"), "-out", self.path(name + ".pem"), "-days", "2",
                      "-subj", subject, "-addext", "basicConstraints=critical,CA:TRUE",
                      "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def _issue(self, name: str, subject: str, ca: str, extensions: str, days: int = 2) -> None:
        ext = self.path(name + ".ext")
        with open(ext, "w") as f:
            f.write(extensions + "\n")
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", self.path(name + ".key"), "-out", self.path(name + ".csr"), "-subj", subject)
        self._openssl("x509", "-req", "-in", self.path(name + ".csr"), "-CA", self.path(ca + ".pem"),
                      "-CAkey", self.path(ca + ".key"), "-set_serial", str(random.randint(1, 2**31)),
                      "-days", str(days), "-extfile", ext, "-out", self.path(name + ".pem"))
