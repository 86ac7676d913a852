import HearthStorage
import Testing

/// `FlatKeys.lastOfEachKey` against the plain rule: keys in memcmp order (a prefix first), each once, the
/// place appended last for each.
@Suite struct FlatKeysTests {
    @Test func lastOfEachKeyIsTheLastPlaceOfEachKeyInMemcmpOrder() {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<200 {
            var keys = FlatKeys()
            var plain: [[UInt8]] = []
            let n = round == 0 ? 0 : Int.random(in: 1...300, using: &rng)
            for _ in 0..<n {
                // Short keys over a small alphabet, so that duplicates, prefixes and the empty key all occur.
                let k = (0..<Int.random(in: 0...4, using: &rng)).map { _ in [0, 1, 0x7f, 0x80, 0xff].randomElement(using: &rng)! } as [UInt8]
                keys.append(k)
                plain.append(k)
            }
            var last: [[UInt8]: Int] = [:]
            for (i, k) in plain.enumerated() { last[k] = i }
            let expected = last.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { last[$0]! }
            #expect(keys.lastOfEachKey() == expected, "round \(round): \(plain)")
        }
    }

    @Test func stringsAreKeptAsTheirUTF8() {
        var keys = FlatKeys()
        let b = keys.append("b")
        keys.append("é")
        keys.append("a")
        keys.append("b")
        #expect(b.start == 0 && b.count == 1 && keys.count == 4)
        #expect(keys.lastOfEachKey() == [2, 3, 1])
    }
}
