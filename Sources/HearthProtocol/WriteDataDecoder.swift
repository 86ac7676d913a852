import HearthModel

/// Decodes a write's `data` object for each write form (values per `ValueCodec`, plus sentinels):
/// `{"$serverTimestamp":true}`, `{"$increment":n}`, `{"$maximum":n}`, `{"$minimum":n}`,
/// `{"$arrayUnion":[...]}`, `{"$arrayRemove":[...]}` become transforms; `{"$delete":true}` deletes the field;
/// `{"$documentId":true}` is the document's ID as a string value.
///
/// - `set`/`create`: data is the whole document; `$delete` is an error.
/// - `merge`: mask = every leaf path (non-map value or empty map) plus `$delete` paths.
/// - `mergeFields`: mask = the listed paths (no duplicates or overlaps), each present in data; data and
///   transforms outside them are dropped; `$delete` only exactly at a listed path.
/// - `update`: top-level keys are dotted field paths whose values replace wholesale; mask = the keys; no key
///   may be a prefix of another; `$delete` only as a top-level value; data must not be empty.
///
/// Everywhere: transforms and `$delete` never inside arrays, transform targets never in the mask, and the
/// resulting fields must fit `Limits.maxDocumentBytes`. Errors are INVALID_ARGUMENT naming the field.
public enum WriteDataDecoder {
    public enum Mode: Sendable, Equatable {
        case set
        case create
        case merge
        case mergeFields([FieldPath])
        case update
    }

    /// Decodes `data` for a write to `document`. `path` names `data` in error messages.
    public static func decode(_ data: JSONRef, mode: Mode, document: DocumentPath, path: String = "data") throws(HearthError) -> WriteData {
        guard data.isObject else { throw .invalid("\(path) must be an object, not \(data.kind.name)") }
        let values = ValueDecoder(documentID: document.id)
        let result: WriteData
        switch mode {
        case .set, .create:
            var walker = WriteDataWalker(values: values, deletePolicy: .reject("$delete is only allowed in update or set with merge"),
                                         collectLeaves: false)
            let fields = try walk(&walker, data, root: path)
            result = WriteData(fields: fields, mask: nil, transforms: walker.transforms)
        case .merge:
            var walker = WriteDataWalker(values: values, deletePolicy: .allow, collectLeaves: true)
            let fields = try walk(&walker, data, root: path)
            result = WriteData(fields: fields, mask: (walker.leaves + walker.deletes).sorted(), transforms: walker.transforms)
        case .mergeFields(let paths):
            result = try mergeFields(data, paths: paths, values: values, root: path)
        case .update:
            result = try update(data, values: values, root: path)
        }
        let size = Document.storageSize(path: document, fields: result.fields)
        if size > Limits.maxDocumentBytes {
            throw .invalid("document \(document) is too large: \(size) bytes (the limit is \(Limits.maxDocumentBytes) bytes)")
        }
        return result
    }

    /// Parses a `mergeFields` list: an array of dotted field path strings.
    public static func fieldPaths(_ ref: JSONRef, path: String = "mergeFields") throws(HearthError) -> [FieldPath] {
        guard ref.isArray else { throw .invalid("\(path) must be an array of field paths, not \(ref.kind.name)") }
        var out: [FieldPath] = []
        out.reserveCapacity(ref.count)
        for (i, e) in ref.elements.enumerated() {
            guard let s = e.string else { throw .invalid("\(path)[\(i)] must be a string, not \(e.kind.name)") }
            do {
                out.append(try FieldPath.parse(s))
            } catch {
                throw error.prefixed("\(path)[\(i)]")
            }
        }
        return out
    }

    static func walk(_ walker: inout WriteDataWalker, _ data: JSONRef, root: String) throws(HearthError) -> MapValue {
        do {
            return try walker.map(data, memberDepth: 1)
        } catch {
            throw error.hearthError(root: root)
        }
    }

    static func mergeFields(_ data: JSONRef, paths: [FieldPath], values: ValueDecoder, root: String) throws(HearthError) -> WriteData {
        let mask = paths.sorted()
        for (a, b) in zip(mask, mask.dropFirst()) where a.isPrefix(of: b) {
            throw .invalid(a == b ? "mergeFields: field \(a) is listed twice" : "mergeFields: fields \(a) and \(b) overlap")
        }
        var walker = WriteDataWalker(values: values, deletePolicy: .allow, collectLeaves: true)
        let all = try walk(&walker, data, root: root)
        let present = (walker.leaves + walker.deletes + walker.transforms.map(\.field)).sorted()
        for p in paths where !PathSearch.containsPath(under: p, in: present) {
            throw .invalid("mergeFields: field \(p) is not present in \(root)")
        }
        for d in walker.deletes where PathSearch.covering(d, in: mask) != d {
            throw .invalid("\(root).\(d): $delete is only allowed on a field listed in mergeFields")
        }
        var fields = MapValue()
        for p in mask {
            if let v = all.value(at: p) { fields.set(v, at: p) }
        }
        let transforms = walker.transforms.filter { PathSearch.covering($0.field, in: mask) != nil }
        let targets = Set(walker.transforms.map(\.field))
        return WriteData(fields: fields, mask: mask.filter { !targets.contains($0) }, transforms: transforms)
    }

    static func update(_ data: JSONRef, values: ValueDecoder, root: String) throws(HearthError) -> WriteData {
        guard data.count > 0 else { throw .invalid("\(root): update needs at least one field") }
        var entries: [(path: FieldPath, value: JSONRef)] = []
        entries.reserveCapacity(data.count)
        for m in data.members {
            let path: FieldPath
            do {
                path = try FieldPath.parse(m.key)
            } catch {
                throw error.prefixed(root)
            }
            for s in path.segments {
                if let problem = MapKeys.problem(s) { throw .invalid("\(root).\(path): \(problem)") }
            }
            entries.append((path, m.value))
        }
        entries.sort { $0.path < $1.path }
        for (a, b) in zip(entries, entries.dropFirst()) where a.path.isPrefix(of: b.path) {
            throw .invalid(a.path == b.path ? "\(root): field \(a.path) is given twice"
                                            : "\(root): fields \(a.path) and \(b.path) conflict (one is a prefix of the other)")
        }
        var walker = WriteDataWalker(values: values,
                                     deletePolicy: .reject("$delete cannot be nested inside a value in update; use a dotted field path as the key"),
                                     collectLeaves: false)
        var fields = MapValue()
        var mask: [FieldPath] = []
        for (path, v) in entries {
            do throws(DecodeFailure) {
                let depth = path.segments.count
                if depth > values.maxDepth { throw values.tooDeep() }
                if let m = v.dollarMember, WireName.parse(m.keyBytes) == .delete {
                    guard m.value.bool == true else { throw DecodeFailure("$delete needs the value true") }
                    mask.append(path)
                    continue
                }
                walker.segments = path.segments
                if let value = try walker.member(v, depth: depth) {
                    fields.set(value, at: path)
                    mask.append(path)
                }
            } catch {
                throw error.adding(.raw(path.description)).hearthError(root: root)
            }
        }
        return WriteData(fields: fields, mask: mask, transforms: walker.transforms)
    }
}
