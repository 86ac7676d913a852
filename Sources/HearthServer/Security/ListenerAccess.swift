import HearthModel
import HearthStorage

/// What a listener was allowed to listen to, kept so it can be judged again.
enum ListenTarget {
    case document(DocumentPath)
    case query(Query)
}

/// The index of listeners whose access depends on documents: those the rules read with get()/exists() when
/// judging them, and for a document listener the document itself (its rule may read `resource`). When a
/// batch changes one of those documents, the server judges the listener again before it sees the batch
/// (`Engine.willPublish`). Loop thread.
final class ListenerAccess {
    struct Key: Hashable {
        let session: ObjectIdentifier
        let tag: String
    }
    private struct Entry {
        /// Sessions remove their entries when they close (`Session.endSubscriptions`), before they go away.
        unowned(unsafe) let session: Session
        var paths: [DocumentPath]
    }
    private var byPath: [DocumentPath: Set<Key>] = [:]
    private var entries: [Key: Entry] = [:]

    /// Listeners indexed, for tests and stats.
    var count: Int { entries.count }

    /// Sets what the listener `tag` of `session` depends on (replacing what it depended on before).
    func set(_ session: Session, tag: String, dependsOn paths: [DocumentPath]) {
        let key = Key(session: ObjectIdentifier(session), tag: tag)
        remove(key)
        guard !paths.isEmpty else { return }
        entries[key] = Entry(session: session, paths: paths)
        for p in paths { byPath[p, default: []].insert(key) }
    }

    func remove(_ session: Session, tag: String) {
        remove(Key(session: ObjectIdentifier(session), tag: tag))
    }

    private func remove(_ key: Key) {
        guard let e = entries.removeValue(forKey: key) else { return }
        for p in e.paths {
            byPath[p]?.remove(key)
            if byPath[p]?.isEmpty == true { byPath[p] = nil }
        }
    }

    /// The listeners that depend on a document these commits change, each once; a connection's in the
    /// order they were made. With them, the version each such document has after the commits (the published
    /// version once they are published: what judging the listeners again reads).
    func affected(by records: [CommitRecord]) -> (listeners: [(session: Session, tag: String)], versions: [DocumentPath: StoredDocument?]) {
        guard !byPath.isEmpty else { return ([], [:]) }
        var keys = Set<Key>()
        var versions: [DocumentPath: StoredDocument?] = [:]
        for r in records {
            for m in r.mutations {
                guard let ks = byPath[m.path] else { continue }
                keys.formUnion(ks)
                versions[m.path] = .some(m.after)
            }
        }
        let ordered = keys.sorted { a, b in
            a.session != b.session ? a.session < b.session : (Int(a.tag) ?? 0, a.tag) < (Int(b.tag) ?? 0, b.tag)
        }
        return (ordered.compactMap { k in entries[k].map { ($0.session, k.tag) } }, versions)
    }
}
