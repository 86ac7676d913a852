import Foundation
import HearthTesting
import Testing

/// `$arrayUnion` and `$arrayRemove` cost time linear in the array and the operands. With the pairwise
/// comparison they replaced, the union below took 17-25 s of the loop thread in a release build (much more in
/// a debug one), past this test's read timeout; every other connection waited as long.
@Suite(.serialized) final class ArrayTransformTCPTests {
    let daemon: DaemonProcess

    init() throws {
        daemon = try DaemonProcess()
    }

    static func ints(_ range: Range<Int>) -> String { "[" + range.map(String.init).joined(separator: ",") + "]" }

    @Test func largeUnionAndRemoveOf20kOperandsAgainst100kElements() throws {
        let w = try daemon.connect()
        let other = try daemon.connect()
        let set = try w.request(#"{"op":"set","path":"arr/a","data":{"a":"# + Self.ints(0..<100_000) + "}}", timeout: 60)
        #expect(set.isOK, "\(set)")

        let union = try w.request(#"{"op":"update","path":"arr/a","data":{"a":{"$arrayUnion":"# + Self.ints(99_990..<120_000) + "}}}", timeout: 60)
        #expect(union.isOK, "\(union)")
        #expect(try other.request(#"{"op":"ping"}"#).isOK)
        var a = try array(w)
        #expect(a.count == 120_000)
        #expect(a.enumerated().allSatisfy { $0.offset == $0.element })

        // Every other element of the first 40,000, given as doubles: 2.0 equals 2.
        let removed = stride(from: 0, to: 40_000, by: 2).map { "\($0).0" }.joined(separator: ",")
        let remove = try w.request(#"{"op":"update","path":"arr/a","data":{"a":{"$arrayRemove":["# + removed + "]}}}", timeout: 60)
        #expect(remove.isOK, "\(remove)")
        #expect(try other.request(#"{"op":"ping"}"#).isOK)
        a = try array(w)
        #expect(a.count == 100_000)
        #expect(Array(a.prefix(3)) == [1, 3, 5])
        #expect(a[19_999] == 39_999 && a[20_000] == 40_000 && a.last == 119_999)
    }

    private func array(_ c: WireClient) throws -> [Int] {
        let doc = try c.request(#"{"op":"get","path":"arr/a"}"#, timeout: 60)["doc"] as? [String: Any]
        return ((doc?["data"] as? [String: Any])?["a"] as? [Any])?.compactMap { $0 as? Int } ?? []
    }
}
