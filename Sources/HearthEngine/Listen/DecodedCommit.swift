import HearthModel
import HearthStorage

/// A commit's mutation with its document versions decoded once, shared by every listener it affects.
struct DecodedMutation {
    let path: DocumentPath
    let before: MapValue?
    let after: ResultDocument?
}

/// A commit's mutations decoded once per publication, grouped by collection so that a collection query's
/// view looks only at its own collection's documents (a fan-out commit touching 1,000 feeds costs each
/// feed's listener one document, not 1,000).
struct DecodedCommit {
    let all: [DecodedMutation]
    private let byCollection: [CollectionPath: [DecodedMutation]]

    /// `afterFields`, when given, holds for each mutation the fields of its after image as the commit built them
    /// (nil: decode the image): the same value decoding would give, without decoding it again.
    init(_ record: CommitRecord, codec: any DocumentCodec, afterFields: [MapValue?]? = nil) throws(HearthError) {
        var all: [DecodedMutation] = []
        all.reserveCapacity(record.mutations.count)
        // As many collections as mutations at most (a fan-out writes one document in each of many): no rehash
        // as it fills, up to a bound that keeps a large commit to one collection from reserving much.
        var byCollection: [CollectionPath: [DecodedMutation]] = Dictionary(minimumCapacity: min(record.mutations.count, 4096))
        for (i, m) in record.mutations.enumerated() {
            let before: MapValue? = try m.before.map { b throws(HearthError) in try codec.decode(b.data) }
            let known = afterFields?[i]
            var after: ResultDocument?
            if let a = m.after {
                if let known { after = ResultDocument(stored: a, fields: known) } else { after = ResultDocument(stored: a, fields: try codec.decode(a.data)) }
            }
            let d = DecodedMutation(path: m.path, before: before, after: after)
            all.append(d)
            byCollection[m.path.collection, default: []].append(d)
        }
        self.all = all
        self.byCollection = byCollection
    }

    /// The mutations that can concern `q` (a superset; views still check `contains`).
    func mutations(for q: ValidQuery) -> [DecodedMutation] {
        if case .collection(let c) = q.target { return byCollection[c] ?? [] }
        return all
    }
}
