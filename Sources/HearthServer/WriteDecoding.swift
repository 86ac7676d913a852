import HearthModel
import HearthProtocol

/// Builds `Write`s from request objects (a single-write op, or one entry of `commit.writes`). `where` is the
/// prefix errors carry inside a commit (`writes[2]`); a single-write op's errors have none (the dispatcher
/// names the op).
enum WriteDecoding {
    static func decode(kind: Write.Kind, _ obj: JSONRef, where context: String? = nil) throws(HearthError) -> Write {
        guard let context else { return try decodeUnprefixed(kind: kind, obj) }
        do {
            return try decodeUnprefixed(kind: kind, obj)
        } catch {
            throw error.prefixed(context)
        }
    }

    private static func decodeUnprefixed(kind: Write.Kind, _ obj: JSONRef) throws(HearthError) -> Write {
        guard let pathRef = obj["path"], pathRef.kind == .string else {
            throw .invalid(obj["path"] == nil ? "field \"path\" is required" : "field \"path\" must be a string")
        }
        let path: DocumentPath
        do { path = try DocumentPath(parsing: pathRef.string!) } catch { throw .invalid("field \"path\": \(error.message)") }
        let userPrecondition = try precondition(obj["precondition"])
        let merge = try optionalBool(obj["merge"], "merge") ?? false
        let mergeFieldsRef = obj["mergeFields"].flatMap { $0.kind == .null ? nil : $0 }

        func data() throws(HearthError) -> JSONRef {
            guard let d = obj["data"], d.kind != .null else { throw .invalid("field \"data\" is required") }
            guard d.kind == .object else { throw .invalid("field \"data\" must be an object, not \(d.kind.article)") }
            return d
        }
        if kind != .set && (merge || mergeFieldsRef != nil) {
            throw .invalid("merge and mergeFields apply to set only")
        }

        switch kind {
        case .create:
            if userPrecondition != .none { throw .invalid("create takes no precondition (it implies exists:false)") }
            let d = try WriteDataDecoder.decode(try data(), mode: .set, document: path)
            return Write(kind: .create, path: path, operation: .update(fields: d.fields, mask: nil),
                         transforms: d.transforms, precondition: .exists(false))
        case .set:
            let mode: WriteDataDecoder.Mode
            if let mf = mergeFieldsRef {
                if merge { throw .invalid("give either merge or mergeFields, not both") }
                mode = .mergeFields(try fieldPaths(mf, "mergeFields"))
            } else {
                mode = merge ? .merge : .set
            }
            let d = try WriteDataDecoder.decode(try data(), mode: mode, document: path)
            return Write(kind: .set, path: path, operation: .update(fields: d.fields, mask: d.mask),
                         transforms: d.transforms, precondition: userPrecondition)
        case .update:
            if userPrecondition == .exists(false) { throw .invalid("update cannot have precondition exists:false") }
            let d = try WriteDataDecoder.decode(try data(), mode: .update, document: path)
            return Write(kind: .update, path: path, operation: .update(fields: d.fields, mask: d.mask ?? []),
                         transforms: d.transforms, precondition: userPrecondition == .none ? .exists(true) : userPrecondition)
        case .delete:
            if let d = obj["data"], d.kind != .null { throw .invalid("delete takes no data") }
            return Write(kind: .delete, path: path, operation: .delete, precondition: userPrecondition)
        case .verify:
            if let d = obj["data"], d.kind != .null { throw .invalid("verify takes no data") }
            if userPrecondition == .none { throw .invalid("verify needs a precondition") }
            return Write(kind: .verify, path: path, operation: .verify, precondition: userPrecondition)
        }
    }

    static func optionalBool(_ ref: JSONRef?, _ name: String) throws(HearthError) -> Bool? {
        guard let ref, ref.kind != .null else { return nil }
        guard ref.kind == .bool else { throw .invalid("field \"\(name)\" must be true or false, not \(ref.kind.article)") }
        return ref.bool!
    }

    /// `{"exists":bool}` or `{"updateTime":"<RFC 3339>"}` (also `{"updateTime":{"$timestamp":...}}`).
    static func precondition(_ ref: JSONRef?) throws(HearthError) -> Precondition {
        guard let ref, ref.kind != .null else { return .none }
        guard ref.kind == .object else { throw .invalid("field \"precondition\" must be an object like {\"exists\":true} or {\"updateTime\":\"...\"}") }
        var result: Precondition = .none
        var count = 0
        for member in ref.members {
            count += 1
            let value = member.value
            switch member.key {
            case "exists":
                guard value.kind == .bool else { throw .invalid("precondition.exists must be true or false") }
                result = .exists(value.bool!)
            case "updateTime":
                var text: String?
                if value.kind == .string { text = value.string }
                else if value.kind == .object, let t = value["$timestamp"], t.kind == .string { text = t.string }
                guard let text, let t = Timestamp.parse(text) else {
                    throw .invalid("precondition.updateTime must be an RFC 3339 timestamp like \"2026-11-29T12:00:00.123456Z\"")
                }
                result = .updateTime(t)
            default:
                throw .invalid("unknown precondition \"\(member.key)\" (use exists or updateTime)")
            }
        }
        if count != 1 { throw .invalid("precondition must have exactly one of exists or updateTime") }
        return result
    }

    static func fieldPaths(_ ref: JSONRef, _ name: String) throws(HearthError) -> [FieldPath] {
        guard ref.kind == .array else { throw .invalid("field \"\(name)\" must be an array of field paths") }
        var out: [FieldPath] = []
        for (i, el) in ref.elements.enumerated() {
            guard el.kind == .string else { throw .invalid("\(name)[\(i)] must be a string") }
            do { out.append(try FieldPath.parse(el.string!)) } catch { throw .invalid("\(name)[\(i)]: \(error.message)") }
        }
        return out
    }
}
