@testable import HearthEngine
import HearthModel
import Testing

/// The hub keeps each index key's listeners sorted by ID and merges the lists a commit matches without
/// hashing: the merge must give each listener once, in ID order, whatever the overlap.
@Suite struct ListenerIndexTests {
    final class Sink: ListenerSink {
        var canAcceptEvents: Bool { true }
        func deliver(_ event: ListenerEvent, for listener: Listener, shareKey: UInt64?) {}
        func coalescing() {}
    }

    @Test func unionIsEachListenerOnceInIDOrder() throws {
        let sink = Sink()
        let path = try DocumentPath(parsing: "c/d")
        let all = (0..<12).map { Listener(id: $0, tag: "\($0)", target: .document(path), sink: sink, seq: 0) }
        func ids(_ list: [Listener]) -> [Int] { list.map(\.id) }
        func pick(_ ids: [Int]) -> [Listener] { ids.map { all[$0] } }
        #expect(ids(ListenerHub.union([])) == [])
        #expect(ids(ListenerHub.union([pick([1, 4])])) == [1, 4])
        #expect(ids(ListenerHub.union([pick([1, 3, 5]), pick([2, 3, 6]), pick([3])])) == [1, 2, 3, 5, 6])
        #expect(ids(ListenerHub.union([pick([1, 3]), pick([1, 3])])) == [1, 3])
        #expect(ids(ListenerHub.union([pick([]), pick([7]), pick([0, 11])])) == [0, 7, 11])
        // Every split of a random set into overlapping lists merges back to it, by merging (a few lists) or by
        // sorting (many).
        var seed: UInt64 = 7
        for round in 0..<200 {
            var lists: [[Int]] = []
            var expected = Set<Int>()
            for _ in 0..<(round % 2 == 0 ? 3 : 12) {
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                let list = (0..<12).filter { (seed >> UInt64($0 + 20)) & 1 == 1 }
                lists.append(list)
                expected.formUnion(list)
            }
            #expect(ids(ListenerHub.union(lists.map(pick))) == expected.sorted())
        }
    }
}
