import Foundation
import HearthAuth
import HearthTesting
import Testing

@Suite struct Base64URLTests {
    @Test func roundTripsAgainstFoundation() {
        var bytes: [UInt8] = []
        for n in 0..<70 {
            let text = Base64URLText.encode(bytes)
            #expect(Base64URL.encode(bytes) == text)
            #expect(Base64URL.decode(text) == bytes, "\(n) bytes")
            bytes.append(UInt8(truncatingIfNeeded: n &* 37 &+ 250))
        }
    }

    @Test func decodingIsStrict() {
        #expect(Base64URL.decode("") == [])
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        let refused = ["+/8", "-_8=", "QQ==", "Q", "QQQQQ", "QR", "QU I", "QUJD\n", "QU\u{0}"]
        for text in refused {
            #expect(Base64URL.decode(text) == nil, "\(text.debugDescription)")
        }
        #expect(Base64URL.decode("QQ") == [0x41])
        #expect(Base64URL.decode("QUE") == [0x41, 0x41])
    }
}
