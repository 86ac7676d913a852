import HearthModel

/// Names visible in a match block: its path variables and functions, then its parent's.
final class Scope {
    let parent: Scope?
    var pathVariables: [String: Int] = [:]
    var functions: [String: Int] = [:]
    init(parent: Scope?) { self.parent = parent }

    func pathVariable(_ name: String) -> Int? { pathVariables[name] ?? parent?.pathVariable(name) }
    func function(_ name: String) -> Int? { functions[name] ?? parent?.function(name) }
}

/// Parameters and lets of the function being compiled.
struct Locals {
    var function: Int
    var names: [String: CExpr] = [:]
}

/// Turns the syntax tree into a `Program`: resolves every name, checks every construct against the supported
/// subset, allocates variable slots and compiles literal regular expressions. Each refusal names its position.
struct Compiler {
    let file: Syntax.File
    var functions: [CompiledFunction] = []
    var functionNames: [String] = []
    var functionPositions: [SourcePos] = []
    var functionArity: [Int] = []
    var calls: [Set<Int>] = []
    var nextSlot = 0
    var allowCount = 0
    /// Set whenever an expression reading `resource` is compiled (reset around each function and allow).
    var readsResource = false
    /// Functions whose own body reads `resource`.
    var resourceFunctions = Set<Int>()
    /// Functions an allow condition calls directly, while it is being compiled.
    var allowCalls = Set<Int>()
    /// Per allow: its methods, whether its condition reads `resource` itself, and the functions it calls.
    var allowResourceUse: [(methods: UInt8, direct: Bool, calls: Set<Int>)] = []

    static let namespaces: Set<String> = ["math", "timestamp", "duration", "latlng", "hashing"]
    static let globalBuiltins: [String: Builtin] = [
        "get": .get, "exists": .exists, "getAfter": .getAfter, "existsAfter": .existsAfter, "int": .int,
        "float": .float, "string": .string, "bool": .bool, "path": .path, "debug": .debug,
    ]

    init(_ file: Syntax.File) { self.file = file }

    static func maxPathVariables(_ m: Syntax.Match) -> Int {
        let own = m.segments.filter { if case .literal = $0.0 { return false } else { return true } }.count
        return own + (m.matches.map(maxPathVariables).max() ?? 0)
    }

    mutating func compile() throws(CompileError) -> Program {
        nextSlot = file.matches.map(Compiler.maxPathVariables).max() ?? 0
        let service = Scope(parent: nil)
        try declareFunctions(file.functions, in: service)
        var roots: [MatchNode] = []
        var databaseSlots: [Int] = []
        for m in file.matches {
            let segs = m.segments.map(\.0)
            guard segs.count == 3, case .literal("databases") = segs[0], case .variable(let db) = segs[1],
                  case .literal("documents") = segs[2] else {
                throw CompileError(m.segments.first?.1 ?? m.pos, "the top-level match must be /databases/{database}/documents (found \(m.pattern))")
            }
            let scope = Scope(parent: service)
            scope.pathVariables[db] = 0
            databaseSlots.append(0)
            roots.append(try compileBody(m, scope: scope, segments: [], pattern: "", varCount: 1, restSeen: false))
        }
        try checkRecursion()
        return Program(version: file.version, roots: roots, databaseSlots: databaseSlots, functions: functions,
                       slotCount: nextSlot, allowCount: allowCount, resourceMethods: resourceMethods())
    }

    /// The methods for which some allow condition may read `resource`, directly or through the functions it
    /// calls (transitively): a request of another method needs no stored document to be judged.
    func resourceMethods() -> UInt8 {
        var memo: [Int: Bool] = [:]
        func uses(_ f: Int) -> Bool {
            if let known = memo[f] { return known }
            memo[f] = false                       // recursion is refused; this only stops a cycle here
            let r = resourceFunctions.contains(f) || calls[f].contains(where: uses)
            memo[f] = r
            return r
        }
        var mask: UInt8 = 0
        for a in allowResourceUse where a.direct || a.calls.contains(where: uses) { mask |= a.methods }
        return mask
    }

    mutating func compileMatch(_ m: Syntax.Match, parent: Scope, pattern: String, varCount: Int, restSeen: Bool) throws(CompileError) -> MatchNode {
        let scope = Scope(parent: parent)
        var segments: [PatternSegment] = []
        var count = varCount
        var rest = restSeen
        for (i, (seg, pos)) in m.segments.enumerated() {
            switch seg {
            case .literal(let s):
                segments.append(.literal(s))
            case .variable(let name), .rest(let name):
                if scope.pathVariable(name) != nil || scope.pathVariables[name] != nil {
                    throw CompileError(pos, "path variable '\(name)' is already bound by an enclosing match")
                }
                scope.pathVariables[name] = count
                if case .rest = seg {
                    if rest { throw CompileError(pos, "only one recursive wildcard {name=**} is allowed in a path") }
                    rest = true
                    if file.version == 1 && (i != m.segments.count - 1 || !m.matches.isEmpty) {
                        throw CompileError(pos, "with rules_version '1' a recursive wildcard {name=**} must be the last segment of the path (rules_version = '2' allows it anywhere)")
                    }
                    segments.append(.rest(count, name))
                } else {
                    segments.append(.variable(count))
                }
                count += 1
            }
        }
        return try compileBody(m, scope: scope, segments: segments, pattern: pattern + m.pattern, varCount: count, restSeen: rest)
    }

    mutating func compileBody(_ m: Syntax.Match, scope: Scope, segments: [PatternSegment], pattern: String, varCount: Int, restSeen: Bool) throws(CompileError) -> MatchNode {
        try declareFunctions(m.functions, in: scope)
        var allows: [CompiledAllow] = []
        for a in m.allows {
            var bits: UInt8 = 0
            for (name, pos) in a.methods {
                switch name {
                case "read": bits |= CompiledAllow.bit(.get) | CompiledAllow.bit(.list)
                case "write": bits |= CompiledAllow.bit(.create) | CompiledAllow.bit(.update) | CompiledAllow.bit(.delete)
                default:
                    guard let method = RuleMethod(rawValue: name) else {
                        throw CompileError(pos, "unknown method '\(name)' (read, write, get, list, create, update, delete)")
                    }
                    bits |= CompiledAllow.bit(method)
                }
            }
            readsResource = false
            allowCalls = []
            let condition: CExpr? = try a.condition.map { e throws(CompileError) in try compileExpr(e, scope, nil) }
            allowResourceUse.append((bits, readsResource, allowCalls))
            allows.append(CompiledAllow(methods: bits, condition: condition, pos: a.pos, id: allowCount))
            allowCount += 1
        }
        var children: [MatchNode] = []
        for child in m.matches {
            children.append(try compileMatch(child, parent: scope, pattern: pattern, varCount: varCount, restSeen: restSeen))
        }
        let below = allows.reduce(UInt8(0)) { $0 | $1.methods } | children.reduce(UInt8(0)) { $0 | $1.methodsBelow }
        return MatchNode(segments: segments, pattern: pattern.isEmpty ? "/" : pattern, allows: allows,
                         children: children, methodsBelow: below)
    }

    mutating func declareFunctions(_ decls: [Syntax.Function], in scope: Scope) throws(CompileError) {
        var indices: [Int] = []
        for f in decls {
            if scope.functions[f.name] != nil {
                throw CompileError(f.pos, "function '\(f.name)' is already declared in this scope")
            }
            if Compiler.globalBuiltins[f.name] != nil || Compiler.namespaces.contains(f.name) {
                throw CompileError(f.pos, "function name '\(f.name)' is reserved for a built-in")
            }
            let index = functions.count
            scope.functions[f.name] = index
            functions.append(CompiledFunction(name: f.name, paramSlots: [], letSlots: [], body: .constant(.null)))
            functionNames.append(f.name)
            functionPositions.append(f.pos)
            functionArity.append(f.params.count)
            calls.append([])
            indices.append(index)
        }
        for (f, index) in zip(decls, indices) {
            var locals = Locals(function: index)
            var params: [Int] = []
            for (p, pos) in f.params {
                if locals.names[p] != nil { throw CompileError(pos, "parameter '\(p)' is declared twice") }
                locals.names[p] = .slot(nextSlot)
                params.append(nextSlot)
                nextSlot += 1
            }
            var lets: [Int] = []
            readsResource = false
            for (name, e, pos) in f.lets {
                if locals.names[name] != nil { throw CompileError(pos, "'\(name)' is already declared in this function") }
                let compiled = try compileExpr(e, scope, locals)
                locals.names[name] = .lazyLet(nextSlot, compiled)
                lets.append(nextSlot)
                nextSlot += 1
            }
            let body = try compileExpr(f.body, scope, locals)
            if readsResource { resourceFunctions.insert(index) }
            readsResource = false
            functions[index] = CompiledFunction(name: f.name, paramSlots: params, letSlots: lets, body: body)
        }
    }

    func checkRecursion() throws(CompileError) {
        // Depth-first search for a cycle in the call graph; Firestore forbids recursion.
        var state = [UInt8](repeating: 0, count: functions.count)  // 0 new, 1 on stack, 2 done
        func visit(_ f: Int) -> Int? {
            state[f] = 1
            for g in calls[f] {
                if state[g] == 1 { return g }
                if state[g] == 0, let cycle = visit(g) { return cycle }
            }
            state[f] = 2
            return nil
        }
        for f in 0..<functions.count where state[f] == 0 {
            if let g = visit(f) {
                throw CompileError(functionPositions[g], "function '\(functionNames[g])' is recursive (it calls itself directly or through other functions), which rules do not allow")
            }
        }
    }

    // MARK: Expressions

    func isBare(_ e: Syntax.Expr, _ name: String, _ scope: Scope, _ locals: Locals?) -> Bool {
        guard case .identifier(name) = e.kind else { return false }
        return locals?.names[name] == nil && scope.pathVariable(name) == nil
    }

    mutating func compileExpr(_ e: Syntax.Expr, _ scope: Scope, _ locals: Locals?) throws(CompileError) -> CExpr {
        switch e.kind {
        case .null: return .constant(.null)
        case .bool(let b): return .constant(.bool(b))
        case .int(let i): return .constant(.int(i))
        case .float(let d): return .constant(.float(d))
        case .string(let s): return .constant(.string(s))
        case .identifier(let name):
            if let local = locals?.names[name] { return local }
            if let slot = scope.pathVariable(name) { return .slot(slot) }
            switch name {
            case "request": return .request
            case "resource": readsResource = true; return .resource(e.pos)
            default: break
            }
            if Compiler.namespaces.contains(name) {
                throw CompileError(e.pos, "'\(name)' is a namespace: call one of its functions, as in \(name).\(name == "math" ? "abs" : "value")(...)")
            }
            if scope.function(name) != nil || Compiler.globalBuiltins[name] != nil {
                throw CompileError(e.pos, "function '\(name)' must be called with arguments")
            }
            throw CompileError(e.pos, "unknown name '\(name)' (not a path variable, parameter, let, request or resource)")
        case .member(let base, let name):
            return try compileMember(base, name, e.pos, scope, locals)
        case .index(let base, let index):
            return .index(try compileExpr(base, scope, locals), try compileExpr(index, scope, locals), e.pos)
        case .slice(let base, let lo, let hi):
            let b = try compileExpr(base, scope, locals)
            let l: CExpr? = try lo.map { x throws(CompileError) in try compileExpr(x, scope, locals) }
            let h: CExpr? = try hi.map { x throws(CompileError) in try compileExpr(x, scope, locals) }
            return .slice(b, l, h, e.pos)
        case .call(let callee, let args):
            return try compileCall(callee, args, e.pos, scope, locals)
        case .unary(let op, let operand):
            let x = try compileExpr(operand, scope, locals)
            return op == "!" ? .not(x, e.pos) : .negate(x, e.pos)
        case .binary(let op, let l, let r):
            let a = try compileExpr(l, scope, locals)
            let b = try compileExpr(r, scope, locals)
            switch op {
            case "&&": return .and(a, b, e.pos)
            case "||": return .or(a, b, e.pos)
            default: break
            }
            guard let bop = BinaryOp(rawValue: op) else { throw CompileError(e.pos, "operator '\(op)' is not supported") }
            if bop == .eq || bop == .ne {
                if case .requestField(.auth, _) = a, case .constant(.null) = b { return .authIsNull(bop == .eq) }
                if case .constant(.null) = a, case .requestField(.auth, _) = b { return .authIsNull(bop == .eq) }
            }
            return .binary(bop, a, b, e.pos)
        case .ternary(let c, let a, let b):
            return .ternary(try compileExpr(c, scope, locals), try compileExpr(a, scope, locals),
                            try compileExpr(b, scope, locals), e.pos)
        case .isType(let x, let type):
            guard let t = TypeName(rawValue: type) else {
                throw CompileError(e.pos, "unknown type '\(type)' after 'is' (supported: \(TypeName.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            return .isType(try compileExpr(x, scope, locals), t, e.pos)
        case .list(let items):
            var out: [CExpr] = []
            for i in items { out.append(try compileExpr(i, scope, locals)) }
            if out.allSatisfy({ if case .constant = $0 { return true } else { return false } }) {
                return .constant(.list(out.map { if case .constant(let v) = $0 { return v } else { return .null } }))
            }
            return .list(out)
        case .map(let entries):
            var out: [(CExpr, CExpr)] = []
            for (k, v) in entries {
                let key = try compileExpr(k, scope, locals)
                if case .constant(let kv) = key, case .string = kv {} else if case .constant = key {
                    throw CompileError(k.pos, "map keys must be strings")
                }
                out.append((key, try compileExpr(v, scope, locals)))
            }
            return .map(out, e.pos)
        case .path(let segments):
            var out: [[CompiledPathPiece]] = []
            for seg in segments {
                var pieces: [CompiledPathPiece] = []
                for p in seg {
                    switch p {
                    case .text(let t): pieces.append(.text(t))
                    case .interpolation(let x): pieces.append(.expr(try compileExpr(x, scope, locals)))
                    }
                }
                out.append(pieces)
            }
            return .path(out, e.pos)
        }
    }

    mutating func compileMember(_ base: Syntax.Expr, _ name: String, _ pos: SourcePos, _ scope: Scope, _ locals: Locals?) throws(CompileError) -> CExpr {
        if isBare(base, "request", scope, locals) {
            guard let field = RequestField(rawValue: name) else {
                throw CompileError(pos, "request.\(name) is not supported (request has auth, resource, time, method, path, query)")
            }
            return .requestField(field, pos)
        }
        if case .member(let inner, "auth") = base.kind, isBare(inner, "request", scope, locals) {
            switch name {
            case "uid": return .authUID(pos)
            case "token": return .authToken(pos)
            default: throw CompileError(pos, "request.auth.\(name) is not supported (request.auth has uid and token)")
            }
        }
        if case .member(let inner, "query") = base.kind, isBare(inner, "request", scope, locals),
           !["limit", "offset", "orderBy"].contains(name) {
            throw CompileError(pos, "request.query.\(name) is not supported (request.query has limit, offset, orderBy)")
        }
        if name == "data", isBare(base, "resource", scope, locals) { readsResource = true; return .resourceData(pos) }
        if name == "data", case .member(let inner, "resource") = base.kind, isBare(inner, "request", scope, locals) {
            return .requestResourceData(pos)
        }
        if case .identifier(let ns) = base.kind, Compiler.namespaces.contains(ns), isBare(base, ns, scope, locals) {
            throw CompileError(pos, "\(ns).\(name) must be called as a function")
        }
        return .member(try compileExpr(base, scope, locals), name, pos)
    }

    mutating func compileArgs(_ args: [Syntax.Expr], _ scope: Scope, _ locals: Locals?) throws(CompileError) -> [CExpr] {
        var out: [CExpr] = []
        for a in args { out.append(try compileExpr(a, scope, locals)) }
        return out
    }

    mutating func compileCall(_ callee: Syntax.Expr, _ args: [Syntax.Expr], _ pos: SourcePos, _ scope: Scope, _ locals: Locals?) throws(CompileError) -> CExpr {
        switch callee.kind {
        case .identifier(let name):
            if let index = scope.function(name), locals?.names[name] == nil {
                let n = functionArity[index]
                if n != args.count {
                    throw CompileError(pos, "function '\(name)' takes \(n) argument\(n == 1 ? "" : "s"), not \(args.count)")
                }
                if let caller = locals?.function { calls[caller].insert(index) } else { allowCalls.insert(index) }
                return .call(index, try compileArgs(args, scope, locals), pos)
            }
            if let b = Compiler.globalBuiltins[name] {
                try checkArity(b.arity, args.count, name, pos)
                return .builtin(b, try compileArgs(args, scope, locals), pos)
            }
            throw CompileError(pos, "unknown function '\(name)'")
        case .member(let base, let name):
            if case .identifier(let ns) = base.kind, Compiler.namespaces.contains(ns), isBare(base, ns, scope, locals) {
                if ns == "hashing" { throw CompileError(pos, "hashing.\(name) is not supported (no hashing functions)") }
                guard let b = Builtin(rawValue: "\(ns).\(name)") else {
                    throw CompileError(pos, "function '\(ns).\(name)' is not supported")
                }
                try checkArity(b.arity, args.count, "\(ns).\(name)", pos)
                return .builtin(b, try compileArgs(args, scope, locals), pos)
            }
            guard let method = Method(rawValue: name) else {
                throw CompileError(pos, "method '\(name)' is not supported")
            }
            try checkArity(method.arity, args.count, name + "()", pos)
            let receiver: CExpr
            if case .member(let inner, "data") = base.kind, isBare(inner, "resource", scope, locals) {
                readsResource = true
                receiver = .resourceData(base.pos)
            } else {
                receiver = try compileExpr(base, scope, locals)
            }
            let compiledArgs = try compileArgs(args, scope, locals)
            if method == .matches, case .constant(.string(let pattern)) = compiledArgs[0] {
                do throws(RegexError) {
                    return .regexMatch(receiver, try CompiledRegex(pattern), pos)
                } catch {
                    throw CompileError(args[0].pos, "invalid regular expression '\(pattern)' (RE2: \(error.reason))")
                }
            }
            return .method(receiver, method, compiledArgs, pos)
        default:
            throw CompileError(pos, "only functions and methods can be called")
        }
    }

    func checkArity(_ arity: ClosedRange<Int>, _ count: Int, _ name: String, _ pos: SourcePos) throws(CompileError) {
        guard !arity.contains(count) else { return }
        let want = arity.lowerBound == arity.upperBound ? "\(arity.lowerBound)" : "\(arity.lowerBound) to \(arity.upperBound)"
        throw CompileError(pos, "\(name) takes \(want) argument\(arity.upperBound == 1 ? "" : "s"), not \(count)")
    }
}
