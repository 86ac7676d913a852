import Foundation
import HearthCrypto
import HearthTesting
import Testing

/// Mutual TLS as an identity: the verified client certificate's subject is `request.auth.token.cert_subject`
/// (and `request.auth.uid` when the connection gave no token).
@Suite struct CertificateIdentityTests {
    @Test func theClientCertificateSubjectReachesTheRules() throws {
        let certs = TLSDaemonTests.certs
        let mint = try TokenMint()
        defer { mint.cleanUp() }
        let rules = mint.dir + "/cert.rules"
        try """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /reports/{id} {
              allow read: if request.auth.token.cert_subject == '\(TestCertificates.clientSubject)';
            }
            match /mine/{uid} {
              allow read: if request.auth.uid == uid;
            }
          }
        }
        """.write(toFile: rules, atomically: true, encoding: .utf8)
        let d = try DaemonProcess(extraArgs: ["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey,
                                              "--tls-client-ca", certs.caFile, "--rules", rules,
                                              "--auth-secret-file", mint.secretFile])
        let c = try WireClient(port: d.port, tls: .client(caFile: certs.caFile, certificateFile: certs.clientCert, keyFile: certs.clientKey))
        #expect(try c.request(#"{"op":"get","path":"reports/r1"}"#).isOK)
        // Without a token the subject is the uid too.
        #expect(try c.request(#"{"op":"get","path":"mine/\#(TestCertificates.clientSubject)"}"#).isOK)
        #expect(try c.request(#"{"op":"get","path":"mine/alice"}"#).errorCode == "PERMISSION_DENIED")
        // With a token, the token names the uid and the certificate stays in the claims.
        #expect(try c.call(["op": "hello", "token": try mint.hs256(TokenMint.claims("alice"))]).isOK)
        #expect(try c.request(#"{"op":"get","path":"mine/alice"}"#).isOK)
        #expect(try c.request(#"{"op":"get","path":"reports/r1"}"#).isOK)
        // The claim names a verified certificate only: a token's own `cert_subject` is not one, on a TLS
        // connection (the certificate's wins) and on a plain one (dropped).
        let claiming = try mint.hs256(TokenMint.claims("mallory", extra: ["cert_subject": TestCertificates.clientSubject]))
        #expect(try c.call(["op": "hello", "token": try mint.hs256(TokenMint.claims("mallory", extra: ["cert_subject": "CN=other"]))]).isOK)
        #expect(try c.request(#"{"op":"get","path":"reports/r1"}"#).isOK)
        let plain = try DaemonProcess(extraArgs: ["--rules", rules, "--auth-secret-file", mint.secretFile])
        let p = try plain.connect()
        #expect(try p.call(["op": "hello", "token": claiming]).isOK)
        #expect(try p.request(#"{"op":"get","path":"reports/r1"}"#).errorCode == "PERMISSION_DENIED")
    }
}
