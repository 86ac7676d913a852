import HearthEngine
import HearthModel
import HearthRules
import HearthStorage

/// What the rules' `get()`/`exists()` read, and the first failure met while reading (a damaged document):
/// a rule that read through a failure is not trusted either way, and the request gets that failure instead.
class RecordingRuleReader: RuleDocumentReader {
    private(set) var failure: HearthError?

    func get(_ path: DocumentPath) -> MapValue? { read(path) }
    func getAfter(_ path: DocumentPath) -> MapValue? { read(path) }

    func read(_ path: DocumentPath) -> MapValue? { nil }

    func fail(_ error: HearthError) { if failure == nil { failure = error } }
}

/// The published state, on the loop thread (through the engine's cache; a store read counts for the
/// snapshot gate like any read of the request). Over a store across the network a document the loop does not
/// hold is missed rather than read (`Engine.publishedOnLoop`): the request runs again once it is read.
final class PublishedRuleReader: RecordingRuleReader {
    unowned let engine: Engine
    init(engine: Engine) { self.engine = engine }

    override func read(_ path: DocumentPath) -> MapValue? {
        do throws(HearthError) {
            guard let doc = try engine.publishedOnLoop(path) else { return nil }
            return try engine.fields(of: doc)
        } catch {
            fail(error)
            return nil
        }
    }
}

/// A reader thread's snapshot, for the documents of a large read judged there.
final class SnapshotRuleReader: RecordingRuleReader {
    let snapshot: any StoreSnapshot
    let codec: any DocumentCodec
    init(snapshot: any StoreSnapshot, codec: any DocumentCodec) {
        self.snapshot = snapshot
        self.codec = codec
    }

    override func read(_ path: DocumentPath) -> MapValue? {
        do throws(HearthError) {
            guard let doc = try snapshot.get(path) else { return nil }
            return try codec.decode(doc.data)
        } catch {
            fail(error)
            return nil
        }
    }
}

/// A commit under review: `get()` sees the state the commit applies to (durable and pending commits),
/// `getAfter()` the commit's result where it touches the document. Over a store across the network a document
/// the loop does not hold is missed rather than read (`Engine.latestFields`): the write runs again once it is
/// read.
final class CommitRuleReader: RecordingRuleReader {
    unowned let engine: Engine
    let review: CommitReview
    init(engine: Engine, review: CommitReview) {
        self.engine = engine
        self.review = review
    }

    override func read(_ path: DocumentPath) -> MapValue? {
        do throws(HearthError) { return try engine.latestFields(path) } catch {
            fail(error)
            return nil
        }
    }

    override func getAfter(_ path: DocumentPath) -> MapValue? {
        if let after = review.after(path) { return after }
        return read(path)
    }
}
