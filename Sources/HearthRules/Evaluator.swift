import HearthModel

/// Why an expression could not be evaluated. `undecidable` marks a list rule that needs something the query
/// does not pin (its message says what the query must constrain).
struct EvalError: Error {
    var pos: SourcePos
    var message: String
    var undecidable = false
}

/// Evaluates compiled expressions for one request. Path variables, parameters and lets live in `slots`;
/// documents read by `get()` and friends are cached and counted against the request's budget.
struct Evaluator {
    let program: Program
    let request: RuleRequest
    let reader: any RuleDocumentReader
    var slots: [RuleValue]
    var reads: [DocumentPath] = []
    var cache: [(path: DocumentPath, after: Bool, data: MapValue?)] = []
    /// Set while judging one case of a list request.
    var listCase: ListCase?

    init(program: Program, request: RuleRequest, reader: any RuleDocumentReader) {
        self.program = program
        self.request = request
        self.reader = reader
        slots = [RuleValue](repeating: .unset, count: program.slotCount)
    }

    static func fail(_ pos: SourcePos, _ message: String) -> EvalError { EvalError(pos: pos, message: message) }

    /// Evaluates an allow condition; anything but a bool is an error.
    mutating func condition(_ e: CExpr) throws(EvalError) -> Bool {
        let v = try eval(e)
        if case .bool(let b) = v { return b }
        throw Evaluator.fail(position(e), "the condition is \(try describe(v, e)), not a bool")
    }

    func describe(_ v: RuleValue, _ e: CExpr) throws(EvalError) -> String {
        if case .symbolic(let s) = v { throw undecidable(s, position(e)) }
        return "a \(v.typeName)"
    }

    func position(_ e: CExpr) -> SourcePos {
        switch e {
        case .resource(let p), .requestField(_, let p), .authUID(let p), .authToken(let p), .resourceData(let p),
             .requestResourceData(let p), .member(_, _, let p), .index(_, _, let p), .slice(_, _, _, let p),
             .not(_, let p), .negate(_, let p), .and(_, _, let p), .or(_, _, let p), .ternary(_, _, _, let p),
             .binary(_, _, _, let p), .isType(_, _, let p), .map(_, let p), .path(_, let p), .call(_, _, let p),
             .builtin(_, _, let p), .method(_, _, _, let p), .regexMatch(_, _, let p):
            return p
        case .lazyLet(_, let inner): return position(inner)
        case .list(let items): return items.first.map(position) ?? SourcePos(0, 0)
        default: return SourcePos(0, 0)
        }
    }

    /// A bool operand of `&&`, `||`, `!` or `?:`.
    mutating func bool(_ e: CExpr) throws(EvalError) -> Bool {
        let v = try eval(e)
        if case .bool(let b) = v { return b }
        throw Evaluator.fail(position(e), "expected a bool, got \(try describe(v, e))")
    }

    mutating func eval(_ e: CExpr) throws(EvalError) -> RuleValue {
        switch e {
        case .constant(let v): return v
        case .slot(let i): return slots[i]
        case .lazyLet(let i, let inner):
            if case .unset = slots[i] { slots[i] = try eval(inner) }
            return slots[i]
        case .request: return .request
        case .resource:
            if listCase != nil { return .symbolic(.resource) }
            guard let data = request.resource else { return .null }
            return .resource(RuleResource(path: request.path, data: data))
        case .requestField(let field, let pos): return try requestField(field, pos)
        case .authUID(let pos):
            guard let auth = request.auth else { throw Evaluator.fail(pos, "request.auth is null (the request is not authenticated), so it has no uid") }
            return .string(auth.uid)
        case .authToken(let pos):
            guard let auth = request.auth else { throw Evaluator.fail(pos, "request.auth is null (the request is not authenticated), so it has no token") }
            return .map(.document(auth.token))
        case .authIsNull(let isNull): return .bool((request.auth == nil) == isNull)
        case .resourceData(let pos):
            if listCase != nil { return .symbolic(.data([])) }
            guard let data = request.resource else { throw Evaluator.fail(pos, "resource is null (the document does not exist), so resource.data cannot be read") }
            return .map(.document(data))
        case .requestResourceData(let pos):
            guard let data = request.requestResource else {
                throw Evaluator.fail(pos, "request.resource is null (only create and update have one), so request.resource.data cannot be read")
            }
            return .map(.document(data))
        case .member(let base, let name, let pos): return try member(try eval(base), name, pos)
        case .index(let base, let index, let pos): return try self.index(try eval(base), try eval(index), pos)
        case .slice(let base, let lo, let hi, let pos):
            let b = try eval(base)
            let l = try lo.map { x throws(EvalError) in try eval(x) }
            let h = try hi.map { x throws(EvalError) in try eval(x) }
            return try slice(b, l, h, pos)
        case .not(let x, _): return .bool(!(try bool(x)))
        case .negate(let x, let pos): return try negate(try eval(x), pos)
        case .and(let a, let b, _):
            // Errors are absorbed when the other side decides: error && false is false.
            do {
                if !(try bool(a)) { return .bool(false) }
            } catch {
                if let right = try? bool(b), !right { return .bool(false) }
                throw error
            }
            return .bool(try bool(b))
        case .or(let a, let b, _):
            do {
                if try bool(a) { return .bool(true) }
            } catch {
                if let right = try? bool(b), right { return .bool(true) }
                throw error
            }
            return .bool(try bool(b))
        case .ternary(let c, let a, let b, _):
            return try bool(c) ? try eval(a) : try eval(b)
        case .binary(let op, let a, let b, let pos):
            return try binary(op, try eval(a), try eval(b), pos)
        case .isType(let x, let type, let pos):
            let v = try eval(x)
            if case .symbolic(let s) = v { throw undecidable(s, pos) }
            return .bool(type.matches(v))
        case .list(let items):
            // A value a list query does not pin cannot go into a list or a map: comparisons, `in`, `hasAny` and
            // the rest would then treat it as a value of its own (unequal to everything) instead of refusing.
            var out: [RuleValue] = []
            out.reserveCapacity(items.count)
            for i in items { out.append(try concrete(try eval(i), position(i))) }
            return .list(out)
        case .map(let entries, let pos):
            var out: [(String, RuleValue)] = []
            for (k, v) in entries {
                guard case .string(let key) = try eval(k) else { throw Evaluator.fail(pos, "map keys must be strings") }
                out.append((key, try concrete(try eval(v), position(v))))
            }
            return .map(RuleMap.build(out))
        case .path(let segments, let pos): return try path(segments, pos)
        case .call(let index, let args, _):
            let f = program.functions[index]
            var values: [RuleValue] = []
            values.reserveCapacity(args.count)
            for a in args { values.append(try eval(a)) }
            // Recursion is refused at compile time, so a function is never active twice: it owns its slots.
            for (slot, v) in zip(f.paramSlots, values) { slots[slot] = v }
            for slot in f.letSlots { slots[slot] = .unset }
            return try eval(f.body)
        case .builtin(let b, let args, let pos): return try builtin(b, args, pos)
        case .method(let receiver, let m, let args, let pos):
            let r = try eval(receiver)
            var values: [RuleValue] = []
            values.reserveCapacity(args.count)
            for a in args { values.append(try eval(a)) }
            return try method(r, m, values, pos)
        case .regexMatch(let receiver, let regex, let pos):
            let r = try concrete(try eval(receiver), pos)
            guard case .string(let s) = r else { throw Evaluator.fail(pos, "matches() needs a string, not a \(r.typeName)") }
            return .bool(regex.fullMatch(s))
        }
    }

    // MARK: request and members

    func requestField(_ field: RequestField, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        switch field {
        case .auth:
            guard let auth = request.auth else { return .null }
            return .map(.built([(key: "token", value: .map(.document(auth.token))), (key: "uid", value: .string(auth.uid))]))
        case .resource:
            guard let data = request.requestResource else { return .null }
            return .resource(RuleResource(path: request.path, data: data))
        case .time: return .timestamp(request.time)
        case .method: return .string(request.method.rawValue)
        case .path:
            if let p = request.path { return .path(RulePath(document: p)) }
            if let q = request.query {
                switch q.target {
                case .collection(let c): return .path(RulePath(RulePath.documentsRoot + c.path.segments))
                case .collectionGroup: return .symbolic(.unknown("request.path of a collection-group query"))
                }
            }
            return .null
        case .query:
            guard request.method == .list, request.query != nil else {
                throw Evaluator.fail(pos, "request.query is only available for list requests (this is \(request.method.rawValue))")
            }
            return .query
        }
    }

    func member(_ base: RuleValue, _ name: String, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        switch base {
        case .map(let m):
            guard let v = m[name] else { throw Evaluator.fail(pos, "map has no field '\(name)'") }
            return v
        case .resource(let r):
            switch name {
            case "data": return .map(.document(r.data))
            case "id": return r.path.map { .string($0.id) } ?? .null
            case "__name__": return r.path.map { .path(RulePath(document: $0)) } ?? .null
            default: throw Evaluator.fail(pos, "a resource has data, id and __name__, not '\(name)'")
            }
        case .request:
            guard let field = RequestField(rawValue: name) else { throw Evaluator.fail(pos, "request has no field '\(name)'") }
            return try requestField(field, pos)
        case .query:
            guard let q = request.query else { return .null }
            switch name {
            case "limit": return (q.limit ?? q.limitToLast).map { .int(Int64($0)) } ?? .null
            case "offset": return .int(Int64(q.offset))
            case "orderBy":
                return .map(RuleMap.build(q.orderBy.map { ($0.field.description, .string($0.direction == .ascending ? "ASC" : "DESC")) }))
            default: throw Evaluator.fail(pos, "request.query has limit, offset and orderBy, not '\(name)'")
            }
        case .null:
            throw Evaluator.fail(pos, "cannot read '\(name)' of null")
        case .symbolic(let s):
            return try symbolicMember(s, name, pos)
        default:
            throw Evaluator.fail(pos, "a \(base.typeName) has no field '\(name)'")
        }
    }

    func index(_ base: RuleValue, _ index: RuleValue, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        switch (base, index) {
        case (.list(let items), .int(let i)):
            guard i >= 0, i < items.count else { throw Evaluator.fail(pos, "index \(i) is out of range for a list of \(items.count)") }
            return items[Int(i)]
        case (.path(let p), .int(let i)):
            guard i >= 0, i < p.segments.count else { throw Evaluator.fail(pos, "index \(i) is out of range for a path of \(p.segments.count) segments") }
            return .string(p.segments[Int(i)])
        case (.map, .string(let k)), (.resource, .string(let k)), (.request, .string(let k)), (.query, .string(let k)),
             (.symbolic, .string(let k)):
            return try member(base, k, pos)
        case (.symbolic(let s), _), (_, .symbolic(let s)):
            throw undecidable(s, pos)
        default:
            throw Evaluator.fail(pos, "cannot index a \(base.typeName) with a \(index.typeName)")
        }
    }

    func slice(_ base: RuleValue, _ lo: RuleValue?, _ hi: RuleValue?, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        let b = try concrete(base, pos)
        func bound(_ v: RuleValue?, _ dflt: Int, _ count: Int) throws(EvalError) -> Int {
            guard let v else { return dflt }
            guard case .int(let i) = try concrete(v, pos) else { throw Evaluator.fail(pos, "a range bound must be an int") }
            guard i >= 0, i <= count else { throw Evaluator.fail(pos, "range bound \(i) is outside 0...\(count)") }
            return Int(i)
        }
        switch b {
        case .list(let items):
            let l = try bound(lo, 0, items.count), h = try bound(hi, items.count, items.count)
            guard l <= h else { throw Evaluator.fail(pos, "range [\(l):\(h)] is reversed") }
            return .list(Array(items[l..<h]))
        case .string(let s):
            let scalars = Array(s.unicodeScalars)
            let l = try bound(lo, 0, scalars.count), h = try bound(hi, scalars.count, scalars.count)
            guard l <= h else { throw Evaluator.fail(pos, "range [\(l):\(h)] is reversed") }
            var out = String.UnicodeScalarView()
            out.append(contentsOf: scalars[l..<h])
            return .string(String(out))
        default:
            throw Evaluator.fail(pos, "cannot take a range of a \(b.typeName)")
        }
    }

    /// `value`, or an undecidable error when it is something a list query does not pin.
    func concrete(_ v: RuleValue, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        if case .symbolic(let s) = v { throw undecidable(s, pos) }
        return v
    }

    // MARK: Path literals and document reads

    mutating func path(_ segments: [[CompiledPathPiece]], _ pos: SourcePos) throws(EvalError) -> RuleValue {
        var out: [String] = []
        out.reserveCapacity(segments.count + 2)
        for seg in segments {
            if seg.count == 1, case .text(let t) = seg[0] { out.append(t); continue }
            var text = ""
            for piece in seg {
                switch piece {
                case .text(let t): text += t
                case .expr(let e):
                    let v = try eval(e)
                    switch v {
                    case .string(let s): text += s
                    case .int(let i): text += String(i)
                    case .path(let p) where seg.count == 1:
                        // $(path) alone in a segment splices the path's segments (a {rest=**} binding).
                        out.append(contentsOf: p.segments)
                    case .symbolic(let s): throw undecidable(s, pos)
                    default: throw Evaluator.fail(pos, "$(...) in a path needs a string (or a path), not a \(v.typeName)")
                    }
                }
            }
            if seg.count == 1, case .expr = seg[0], text.isEmpty { continue }
            guard !text.isEmpty else { throw Evaluator.fail(pos, "a path segment is empty") }
            out.append(text)
        }
        return .path(RulePath(out))
    }

    /// The document a `get()`-family call names: `/databases/<db>/documents/<collection>/<id>...`.
    func documentPath(_ v: RuleValue, _ fn: String, _ pos: SourcePos) throws(EvalError) -> DocumentPath {
        guard case .path(let p) = try concrete(v, pos) else { throw Evaluator.fail(pos, "\(fn)() needs a path, not a \(v.typeName)") }
        let s = p.segments
        guard s.count >= 5, s[0] == "databases", s[2] == "documents", (s.count - 3) % 2 == 0 else {
            throw Evaluator.fail(pos, "\(fn)() needs a document path /databases/$(database)/documents/collection/id..., not \(p.description)")
        }
        guard s[1] == "(default)" else { throw Evaluator.fail(pos, "\(fn)() of database '\(s[1])': only (default) exists") }
        do {
            return try DocumentPath(ResourcePath(segments: Array(s[3...])))
        } catch {
            throw Evaluator.fail(pos, "\(fn)(): \(error.message)")
        }
    }

    mutating func read(_ path: DocumentPath, after: Bool, _ fn: String, _ pos: SourcePos) throws(EvalError) -> MapValue? {
        for c in cache where c.after == after && c.path == path { return c.data }
        if !reads.contains(path) {
            guard reads.count < request.maxDocumentReads else {
                throw Evaluator.fail(pos, "\(fn)() of \(path) exceeds the limit of \(request.maxDocumentReads) document reads per request")
            }
            reads.append(path)
        }
        let data = after ? reader.getAfter(path) : reader.get(path)
        cache.append((path, after, data))
        return data
    }
}
