import HearthCrypto
import Testing

@Suite struct OpenSSLTests {
    @Test func linkedAgainstOpenSSL3() {
        #expect(OpenSSL.version.hasPrefix("OpenSSL 3."), "linked with \(OpenSSL.version)")
    }
}
