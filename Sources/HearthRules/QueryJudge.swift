import HearthModel

/// What one case of a list query guarantees about every document it can return: fields pinned by `==` (one
/// value of each `in` list per case), range bounds from `<`, `<=`, `>`, `>=`, and the document ID when
/// `__name__` is pinned.
///
/// A query compares numbers by value (`n == 1` returns documents holding 1 and 1.0, `n == 0` also -0.0), where
/// rules tell them apart (`is int`, `string()`, division): such a value is pinned once per form the documents
/// returned can hold it in, each its own case (`matchedForms`), so every case must be allowed.
struct ListCase {
    struct Bound {
        var value: RuleValue
        var inclusive: Bool
    }

    var pins: [(field: [String], value: Value)] = []
    var lower: [(field: [String], bound: Bound)] = []
    var upper: [(field: [String], bound: Bound)] = []
    var documentID: String?
    /// The pins in a form other than the query's own value (`level as 1.0`), for the denial's message.
    var otherForms: [String] = []

    /// Fields the query pins with `==` or `in` but that were left unpinned, their numbers having more forms
    /// than are judged (`maxCases`), for the denial's message.
    var unpinnedForForms: [[String]] = []

    /// The cases of a query: one per disjunct of its filter in disjunctive normal form and per combination of
    /// `in` values (Firestore caps both at 30 in all), and per form of the numbers pinned (`matchedForms`).
    /// Those forms multiply the cases up to `maxCases` for the whole query, fields in the order of their
    /// paths, whatever the order of the filters; a field whose forms would take it beyond stays unpinned.
    static func cases(of query: ValidQuery) -> [ListCase] {
        var out: [ListCase] = []
        for term in query.disjuncts {
            var partial = [ListCase()]
            // Values as the query gives them first; the fields with other forms after, in path order.
            // Their values and how many forms each has (nil: too many), made into forms only once a field is
            // taken (`forms` of `values`), so no more than the pinned fields' forms are ever built.
            var withForms: [(field: FieldPath, values: [Value], counts: [Int]?)] = []
            for atom in term {
                let segs = atom.field.segments
                switch atom.op {
                case .equal, .in:
                    let isName = atom.field.isDocumentID
                    let listed = atom.op == .in ? atom.value.arrayValue ?? [] : [atom.value]
                    // Names are strings or references, matched exactly.
                    var counts: [Int]? = []
                    if !isName {
                        for v in listed {
                            guard let n = formCount(v, limit: maxCases) else { counts = nil; break }
                            counts!.append(n)
                        }
                    }
                    if let counts, counts.allSatisfy({ $0 == 1 }) {
                        partial = pinned(partial, segs, listed.map { ($0, false) }, isName: isName, field: atom.field)
                    } else {
                        withForms.append((atom.field, listed, counts))
                    }
                    continue
                case .lessThan, .lessThanOrEqual:
                    guard !atom.field.isDocumentID else { continue }
                    let b = Bound(value: RuleValue(atom.value), inclusive: atom.op == .lessThanOrEqual)
                    for i in partial.indices { partial[i].upper.append((segs, b)) }
                case .greaterThan, .greaterThanOrEqual:
                    guard !atom.field.isDocumentID else { continue }
                    let b = Bound(value: RuleValue(atom.value), inclusive: atom.op == .greaterThanOrEqual)
                    for i in partial.indices { partial[i].lower.append((segs, b)) }
                default:
                    continue
                }
            }
            // The disjuncts share `maxCases`; each may have at least the cases of its own values.
            let cap = max(partial.count, maxCases / max(1, query.disjuncts.count))
            var unpinned: [[String]] = []
            for (field, listed, counts) in withForms.sorted(by: { $0.field.segments.lexicographicallyPrecedes($1.field.segments) }) {
                // More cases than judged: the field stays unpinned, so what the rules need of it is undecidable
                // (a denial), never a guess.
                guard let counts, partial.count * counts.reduce(0, +) <= cap else { unpinned.append(field.segments); continue }
                // A value of one form is taken as it is, whatever its size (`forms` copies lists member by member).
                let values = zip(listed, counts).flatMap { v, n in (n == 1 ? [v] : forms(v)).enumerated().map { ($1, $0 > 0) } }
                partial = pinned(partial, field.segments, values, isName: false, field: field)
            }
            if !unpinned.isEmpty { for i in partial.indices { partial[i].unpinnedForForms = unpinned } }
            out += partial
        }
        return out
    }

    /// Every case of `partial`, once per value of `values` pinned on `segs`.
    private static func pinned(_ partial: [ListCase], _ segs: [String], _ values: [(value: Value, other: Bool)],
                               isName: Bool, field: FieldPath) -> [ListCase] {
        partial.flatMap { c in
            values.map { v in
                var copy = c
                copy.pin(segs, v.value, isName: isName)
                if v.other { copy.otherForms.append("\(field) as \(RuleValue(v.value).shortDescription)") }
                return copy
            }
        }
    }

    /// The most cases judged for a query: judging one costs at most that many evaluations of the rules for the
    /// forms of its numbers.
    static let maxCases = 256
    /// The most members (counted through nested lists and maps) of a value whose forms are enumerated.
    static let maxFormMembers = 64

    /// The forms of the values a query's `== v` matches that rules can tell apart, `v` first: an integer also
    /// as a float (and 0 also as -0.0) when the float is exactly it, an integral float also as an integer, and
    /// lists and maps with every combination of their members' forms. `[v]` when it holds no such number
    /// (found in one pass, whatever its size); nil when there are more than `limit` forms, or when a list or
    /// map with such numbers has more than `maxFormMembers` members.
    static func matchedForms(_ v: Value, limit: Int) -> [Value]? {
        guard let count = formCount(v, limit: limit) else { return nil }
        return count == 1 ? [v] : forms(v)
    }

    /// How many forms `matchedForms` gives `v` (one pass, whatever its size), nil for none.
    static func formCount(_ v: Value, limit: Int) -> Int? {
        var members = 0, count = 1
        guard formCount(v, &members, &count, limit: limit) else { return nil }
        // The members of a list or map, not counting itself.
        if count > 1 && members - 1 > maxFormMembers { return nil }
        return count
    }

    /// Counts `v`'s members and multiplies `count` by its forms; false once `count` exceeds `limit`.
    private static func formCount(_ v: Value, _ members: inout Int, _ count: inout Int, limit: Int) -> Bool {
        members += 1
        switch v {
        case .int(let i):
            if Int64(exactly: Double(i)) == i { count *= i == 0 ? 3 : 2 }
        case .double(let d):
            if Int64(exactly: d) != nil { count *= d == 0 ? 3 : 2 }
        case .array(let items):
            for item in items where !formCount(item, &members, &count, limit: limit) { return false }
        case .map(let m):
            for f in m.fields where !formCount(f.value, &members, &count, limit: limit) { return false }
        default:
            break
        }
        return count <= limit
    }

    /// Every form of `v` (`matchedForms`, once bounded), `v` first.
    private static func forms(_ v: Value) -> [Value] {
        switch v {
        case .int(let i):
            let d = Double(i)
            guard Int64(exactly: d) == i else { return [v] }   // no float is exactly it (beyond 2^53)
            return i == 0 ? [v, .double(0), .double(-0.0)] : [v, .double(d)]
        case .double(let d):
            guard let i = Int64(exactly: d) else { return [v] }   // fractional, NaN, infinite or beyond Int64
            return d == 0 ? [v, .int(0), .double(d.sign == .minus ? 0 : -0.0)] : [v, .int(i)]
        case .array(let items):
            var combos: [[Value]] = [[]]
            for item in items {
                let f = forms(item)
                combos = combos.flatMap { c in f.map { c + [$0] } }
            }
            return combos.map(Value.array)
        case .map(let m):
            var combos: [[MapValue.Field]] = [[]]
            for field in m.fields {
                let f = forms(field.value)
                combos = combos.flatMap { c in f.map { c + [MapValue.Field(key: field.key, value: $0)] } }
            }
            return combos.map { .map(MapValue(sorted: $0)) }
        default:
            return [v]
        }
    }

    mutating func pin(_ field: [String], _ value: Value, isName: Bool) {
        if isName {
            if case .reference(let p) = value { documentID = p.id } else if case .string(let s) = value { documentID = s }
            return
        }
        if !pins.contains(where: { $0.field == field }) { pins.append((field, value)) }
    }
}

extension Evaluator {
    /// The error for using something a list query does not determine.
    func undecidable(_ s: RuleSymbol, _ pos: SourcePos) -> EvalError {
        let message: String
        switch s {
        case .resource: message = "needs the whole resource, which a query cannot pin (use resource.data.<field>)"
        case .data(let segs):
            if let f = listCase?.unpinnedForForms.first(where: { segs.starts(with: $0) }) {
                message = "needs \"\(FieldPath(f).description)\", which the query's == (or in) matches in more forms than "
                    + "are judged (a number matches both an int and a float: at most \(ListCase.maxCases) cases per query, "
                    + "and lists or maps of up to \(ListCase.maxFormMembers) members)"
            } else {
                message = segs.isEmpty
                    ? "needs resource.data as a whole, which a query cannot pin (compare single fields)"
                    : "needs the query to constrain \"\(FieldPath(segs).description)\" with == (or in)"
            }
        case .documentID: message = "needs the query to fix the document ID (a __name__ == filter)"
        case .wildcard(let name): message = "needs path variable '\(name)', which spans segments the query does not fix"
        case .unknown(let what): message = "needs \(what), which the query does not determine"
        }
        return EvalError(pos: pos, message: message, undecidable: true)
    }

    func symbolicMember(_ s: RuleSymbol, _ name: String, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        switch s {
        case .resource:
            switch name {
            case "data": return .symbolic(.data([]))
            case "id": return listCase?.documentID.map(RuleValue.string) ?? .symbolic(.documentID)
            case "__name__":
                guard let id = listCase?.documentID, case .collection(let c)? = request.query?.target else {
                    return .symbolic(.documentID)
                }
                return .path(RulePath(RulePath.documentsRoot + c.path.segments + [id]))
            default: throw Evaluator.fail(pos, "a resource has data, id and __name__, not '\(name)'")
            }
        case .data(let segs):
            return try resolveData(segs + [name], pos, missingOK: false)!
        default:
            throw undecidable(s, pos)
        }
    }

    /// `resource.data.<segs>` for the current list case: the pinned value, a value inside a pinned map, or
    /// still symbolic (a later comparison may be settled by range bounds).
    func resolveData(_ segs: [String], _ pos: SourcePos, missingOK: Bool) throws(EvalError) -> RuleValue? {
        guard let c = listCase else { throw undecidable(.data(segs), pos) }
        for pin in c.pins {
            if pin.field == segs { return RuleValue(pin.value) }
            if pin.field.count < segs.count, Array(segs.prefix(pin.field.count)) == pin.field {
                var current = pin.value
                for k in segs[pin.field.count...] {
                    guard case .map(let m) = current, let next = m[k] else {
                        if missingOK { return nil }
                        throw Evaluator.fail(pos, "map has no field '\(k)'")
                    }
                    current = next
                }
                return RuleValue(current)
            }
        }
        if missingOK { throw undecidable(.data(segs), pos) }
        return .symbolic(.data(segs))
    }

    /// Comparisons with a symbolic operand: `resource != null` holds for every returned document, and range
    /// bounds of the query settle `resource.data.f < c` when every (or no) value in the range satisfies it.
    func symbolicBinary(_ op: BinaryOp, _ a: RuleValue, _ b: RuleValue, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        if case .symbolic(.resource) = a, case .null = b, op == .eq || op == .ne { return .bool(op == .ne) }
        if case .null = a, case .symbolic(.resource) = b, op == .eq || op == .ne { return .bool(op == .ne) }
        var symbol: RuleSymbol
        var other: RuleValue
        var op = op
        if case .symbolic(let s) = a {
            symbol = s
            other = b
        } else if case .symbolic(let s) = b {
            symbol = s
            other = a
            switch op {  // c < x is x > c
            case .lt: op = .gt
            case .le: op = .ge
            case .gt: op = .lt
            case .ge: op = .le
            default: break
            }
        } else {
            return try binary(op, a, b, pos)
        }
        if case .symbolic(let s2) = other { throw undecidable(s2, pos) }
        guard case .data(let segs) = symbol, let c = listCase, [.lt, .le, .gt, .ge, .eq, .ne].contains(op) else {
            throw undecidable(symbol, pos)
        }
        let lower = c.lower.filter { $0.field == segs }.map(\.bound)
        let upper = c.upper.filter { $0.field == segs }.map(\.bound)
        guard !lower.isEmpty || !upper.isEmpty else { throw undecidable(symbol, pos) }
        if let decided = try Evaluator.judgeRange(op, other, lower: lower, upper: upper, pos) {
            return .bool(decided)
        }
        let field = FieldPath(segs).description
        throw EvalError(pos: pos, message: "needs the query to constrain \"\(field)\" so that resource.data.\(field) \(op.rawValue) \(other.shortDescription) holds for every result (with ==, in, or a range filter)", undecidable: true)
    }

    /// True when every value within the bounds satisfies `x op c`, false when none does, nil when the bounds
    /// do not decide it.
    static func judgeRange(_ op: BinaryOp, _ c: RuleValue, lower: [ListCase.Bound], upper: [ListCase.Bound], _ pos: SourcePos) throws(EvalError) -> Bool? {
        func cmp(_ b: ListCase.Bound) throws(EvalError) -> Int {
            guard let r = RuleValue.compare(b.value, c) else {
                throw Evaluator.fail(pos, "cannot compare a \(b.value.typeName) with a \(c.typeName) using \(op.rawValue)")
            }
            return r
        }
        // "all x in bounds: x < c" needs an upper bound u with u < c, or u == c exclusive; and so on.
        func anyUpper(_ test: (Int, Bool) -> Bool) throws(EvalError) -> Bool {
            for u in upper where test(try cmp(u), u.inclusive) { return true }
            return false
        }
        func anyLower(_ test: (Int, Bool) -> Bool) throws(EvalError) -> Bool {
            for l in lower where test(try cmp(l), l.inclusive) { return true }
            return false
        }
        let belowC = try anyUpper { r, inc in r < 0 || (r == 0 && !inc) }      // every x < c
        let atMostC = try anyUpper { r, _ in r <= 0 }                          // every x <= c
        let aboveC = try anyLower { r, inc in r > 0 || (r == 0 && !inc) }      // every x > c
        let atLeastC = try anyLower { r, _ in r >= 0 }                         // every x >= c
        // Queries order NaN below every number (docs/queries.md): a numeric range without a number above NaN
        // as its lower bound holds NaN, which rules cannot order (an error, so a denial). It settles no
        // ordering then: not as true, and not as false either (`!(x > 3)` would then hold for NaN too).
        func isNumber(_ v: RuleValue) -> Bool {
            switch v { case .int: return true; case .float(let d): return !d.isNaN; default: return false }
        }
        func isNaN(_ v: RuleValue) -> Bool { if case .float(let d) = v { return d.isNaN } else { return false } }
        let holdsNaN = upper.contains { isNumber($0.value) || isNaN($0.value) } && !lower.contains { isNumber($0.value) }
        func ordered(_ decided: Bool?) -> Bool? { holdsNaN ? nil : decided }
        switch op {
        case .lt: return ordered(belowC ? true : (atLeastC ? false : nil))
        case .le: return ordered(atMostC ? true : (aboveC ? false : nil))
        case .gt: return ordered(aboveC ? true : (atMostC ? false : nil))
        case .ge: return ordered(atLeastC ? true : (belowC ? false : nil))
        case .eq: return (belowC || aboveC) ? false : nil
        case .ne: return (belowC || aboveC) ? true : nil
        default: return nil
        }
    }
}
