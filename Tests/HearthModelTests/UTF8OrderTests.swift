import HearthModel
import Testing

/// `UTF8Order` compares strings by their UTF-8 bytes, never by Unicode canonical equivalence.
@Suite("UTF8Order")
struct UTF8OrderTests {
    /// Strings of every length around the word size, small (inline) and large, equal and differing at every
    /// byte, built so that equal strings never share storage: `equal` and `compare` agree with the bytes.
    @Test func equalAndCompareFollowTheBytesAtEveryLengthAndPosition() {
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 100] {
            let base = (0..<n).map { UInt8(97 + $0 % 26) }
            let a = String(decoding: base, as: UTF8.self)
            let same = String(decoding: Array(a.utf8), as: UTF8.self)
            #expect(UTF8Order.equal(a, same) && UTF8Order.compare(a, same) == 0)
            for i in 0..<n {
                var other = base
                other[i] = 98 + other[i] % 26 == 122 ? 97 : other[i] &+ 1
                let b = String(decoding: other, as: UTF8.self)
                #expect(!UTF8Order.equal(a, b), "length \(n), byte \(i)")
                #expect(UTF8Order.compare(a, b) == (base.lexicographicallyPrecedes(other) ? -1 : 1), "length \(n), byte \(i)")
            }
            let longer = a + "x"
            #expect(!UTF8Order.equal(a, longer) && UTF8Order.compare(a, longer) == -1)
        }
    }

    /// Canonically equivalent strings (equal for Swift's `==`) with different bytes are different here.
    @Test func canonicallyEquivalentStringsAreNotEqual() {
        for (a, b) in [("é", "e\u{301}"), ("a\u{301}\u{316}", "a\u{316}\u{301}"), ("Å", "A\u{30A}")] {
            #expect(a == b)
            #expect(!UTF8Order.equal(a, b))
            #expect(UTF8Order.equal(a, String(decoding: Array(a.utf8), as: UTF8.self)))
        }
    }
}
