/// Recursive-descent parser for the rules language. Anything it does not know is an error at its position.
struct Parser {
    var lexer: Lexer
    var current: Token

    init(_ source: String) throws(CompileError) {
        lexer = Lexer(source)
        current = Token(kind: .eof, pos: SourcePos(1, 1))
        current = try lexer.next()
    }

    mutating func advance() throws(CompileError) { current = try lexer.next() }

    func isPunct(_ p: String) -> Bool { current.kind == .punct(p) }
    func isWord(_ w: String) -> Bool { current.kind == .identifier(w) }

    func error(_ expected: String) -> CompileError {
        CompileError(current.pos, "expected \(expected), found \(current.kind.display)")
    }

    mutating func expectPunct(_ p: String) throws(CompileError) {
        guard isPunct(p) else { throw error("'\(p)'") }
        try advance()
    }

    mutating func expectWord(_ w: String) throws(CompileError) {
        guard isWord(w) else { throw error("'\(w)'") }
        try advance()
    }

    mutating func identifier(_ what: String) throws(CompileError) -> (String, SourcePos) {
        guard case .identifier(let name) = current.kind else { throw error(what) }
        let pos = current.pos
        try advance()
        return (name, pos)
    }

    mutating func optionalSemicolon() throws(CompileError) {
        if isPunct(";") { try advance() }
    }

    // MARK: File structure

    mutating func parseFile() throws(CompileError) -> Syntax.File {
        var version = 1
        var versionPos: SourcePos?
        if isWord("rules_version") {
            versionPos = current.pos
            try advance()
            try expectPunct("=")
            guard case .string(let v) = current.kind else { throw error("a version string ('2')") }
            switch v {
            case "1": version = 1
            case "2": version = 2
            default: throw CompileError(current.pos, "rules_version '\(v)' is not supported (use '2' or '1')")
            }
            try advance()
            try optionalSemicolon()
        }
        guard isWord("service") else { throw error("'service'") }
        let servicePos = current.pos
        try advance()
        let (first, namePos) = try identifier("a service name (cloud.firestore)")
        var name = first
        while isPunct(".") {
            try advance()
            name += "." + (try identifier("a service name (cloud.firestore)")).0
        }
        guard name == "cloud.firestore" else {
            throw CompileError(namePos, "service '\(name)' is not supported (only 'cloud.firestore')")
        }
        try expectPunct("{")
        var functions: [Syntax.Function] = []
        var matches: [Syntax.Match] = []
        while !isPunct("}") {
            if isWord("function") {
                functions.append(try parseFunction())
            } else if isWord("match") {
                matches.append(try parseMatch())
            } else if isWord("allow") {
                throw CompileError(current.pos, "'allow' must be inside a 'match' block")
            } else {
                throw error("'match' or 'function'")
            }
        }
        try advance()
        guard current.kind == .eof else { throw error("the end of the file after the service block") }
        return Syntax.File(version: version, versionPos: versionPos, servicePos: servicePos,
                           functions: functions, matches: matches)
    }

    mutating func parseMatch() throws(CompileError) -> Syntax.Match {
        let pos = current.pos
        try advance()
        guard isPunct("/") else { throw error("a path starting with '/'") }
        var segments: [(Syntax.PatternSegment, SourcePos)] = []
        var pattern = ""
        repeat {
            let segPos = lexer.pos
            if lexer.peekByte() == 123 {  // {
                lexer.advanceByte()
                let name = lexer.pathText()
                guard !name.isEmpty, Lexer.isIdentStart(name.utf8.first!), name.utf8.allSatisfy(Lexer.isIdentChar) else {
                    throw CompileError(segPos, "expected a variable name after '{'")
                }
                if lexer.peekByte() == 61 {  // =
                    lexer.advanceByte()
                    guard lexer.peekByte() == 42, lexer.peekByte(1) == 42 else {
                        throw CompileError(lexer.pos, "expected '**' after '=' in a path variable ({name=**})")
                    }
                    lexer.advanceByte(); lexer.advanceByte()
                    segments.append((.rest(name), segPos))
                    pattern += "/{\(name)=**}"
                } else {
                    segments.append((.variable(name), segPos))
                    pattern += "/{\(name)}"
                }
                guard lexer.peekByte() == 125 else { throw CompileError(lexer.pos, "expected '}' to close the path variable") }
                lexer.advanceByte()
            } else {
                let text = lexer.pathText()
                guard !text.isEmpty else { throw CompileError(segPos, "expected a path segment or {variable} after '/'") }
                segments.append((.literal(text), segPos))
                pattern += "/" + text
            }
            guard lexer.peekByte() == 47 else { break }
            lexer.advanceByte()
        } while true
        try advance()
        try expectPunct("{")
        var match = Syntax.Match(pos: pos, segments: segments, pattern: pattern, functions: [], allows: [], matches: [])
        while !isPunct("}") {
            if isWord("match") {
                match.matches.append(try parseMatch())
            } else if isWord("allow") {
                match.allows.append(try parseAllow())
            } else if isWord("function") {
                match.functions.append(try parseFunction())
            } else if isWord("let") {
                throw CompileError(current.pos, "'let' is supported only inside function bodies")
            } else {
                throw error("'match', 'allow', 'function' or '}'")
            }
        }
        try advance()
        return match
    }

    mutating func parseAllow() throws(CompileError) -> Syntax.Allow {
        let pos = current.pos
        try advance()
        var methods: [(String, SourcePos)] = []
        repeat {
            if !methods.isEmpty { try advance() }
            let (m, mPos) = try identifier("a method (read, write, get, list, create, update, delete)")
            methods.append((m, mPos))
        } while isPunct(",")
        var condition: Syntax.Expr?
        if isPunct(":") {
            try advance()
            try expectWord("if")
            condition = try parseExpr()
        }
        if !isPunct("}") && !isWord("allow") && !isWord("match") && !isWord("function") {
            guard isPunct(";") else { throw error(condition == nil ? "':' or ';'" : "';'") }
        }
        try optionalSemicolon()
        return Syntax.Allow(pos: pos, methods: methods, condition: condition)
    }

    mutating func parseFunction() throws(CompileError) -> Syntax.Function {
        let pos = current.pos
        try advance()
        let (name, _) = try identifier("a function name")
        try expectPunct("(")
        var params: [(String, SourcePos)] = []
        while !isPunct(")") {
            if !params.isEmpty { try expectPunct(",") }
            params.append(try identifier("a parameter name"))
        }
        try advance()
        try expectPunct("{")
        var lets: [(String, Syntax.Expr, SourcePos)] = []
        while isWord("let") {
            let letPos = current.pos
            try advance()
            let (n, _) = try identifier("a variable name after 'let'")
            try expectPunct("=")
            let e = try parseExpr()
            guard isPunct(";") else { throw error("';' after the let binding") }
            try advance()
            lets.append((n, e, letPos))
        }
        guard isWord("return") else { throw error(lets.isEmpty ? "'let' or 'return'" : "'let' or 'return'") }
        try advance()
        let body = try parseExpr()
        try optionalSemicolon()
        guard isPunct("}") else { throw error("'}' after the return statement (a function body is lets then one return)") }
        try advance()
        return Syntax.Function(pos: pos, name: name, params: params, lets: lets, body: body)
    }

    // MARK: Expressions

    mutating func parseExpr() throws(CompileError) -> Syntax.Expr {
        let cond = try parseOr()
        guard isPunct("?") else { return cond }
        try advance()
        let a = try parseExpr()
        try expectPunct(":")
        let b = try parseExpr()
        return Syntax.Expr(.ternary(cond, a, b), cond.pos)
    }

    mutating func parseOr() throws(CompileError) -> Syntax.Expr {
        var left = try parseAnd()
        while isPunct("||") {
            let pos = current.pos
            try advance()
            left = Syntax.Expr(.binary("||", left, try parseAnd()), pos)
        }
        return left
    }

    mutating func parseAnd() throws(CompileError) -> Syntax.Expr {
        var left = try parseRelation()
        while isPunct("&&") {
            let pos = current.pos
            try advance()
            left = Syntax.Expr(.binary("&&", left, try parseRelation()), pos)
        }
        return left
    }

    static let relations: Set<String> = ["==", "!=", "<", "<=", ">", ">="]

    mutating func parseRelation() throws(CompileError) -> Syntax.Expr {
        var left = try parseAdditive()
        while true {
            if case .punct(let p) = current.kind, Parser.relations.contains(p) {
                let pos = current.pos
                try advance()
                left = Syntax.Expr(.binary(p, left, try parseAdditive()), pos)
            } else if isWord("in") {
                let pos = current.pos
                try advance()
                left = Syntax.Expr(.binary("in", left, try parseAdditive()), pos)
            } else if isWord("is") {
                let pos = current.pos
                try advance()
                let (type, _) = try identifier("a type name after 'is'")
                left = Syntax.Expr(.isType(left, type), pos)
            } else if isPunct("=") {
                throw CompileError(current.pos, "'=' is not a comparison (did you mean '=='?)")
            } else {
                return left
            }
        }
    }

    mutating func parseAdditive() throws(CompileError) -> Syntax.Expr {
        var left = try parseMultiplicative()
        while isPunct("+") || isPunct("-") {
            guard case .punct(let op) = current.kind else { break }
            let pos = current.pos
            try advance()
            left = Syntax.Expr(.binary(op, left, try parseMultiplicative()), pos)
        }
        return left
    }

    mutating func parseMultiplicative() throws(CompileError) -> Syntax.Expr {
        var left = try parseUnary()
        while isPunct("*") || isPunct("/") || isPunct("%") {
            guard case .punct(let op) = current.kind else { break }
            let pos = current.pos
            try advance()
            left = Syntax.Expr(.binary(op, left, try parseUnary()), pos)
        }
        return left
    }

    mutating func parseUnary() throws(CompileError) -> Syntax.Expr {
        if isPunct("!") || isPunct("-") {
            guard case .punct(let op) = current.kind else { throw error("an expression") }
            let pos = current.pos
            try advance()
            let operand = try parseUnary()
            if op == "-" {
                if case .int(let i) = operand.kind { return Syntax.Expr(.int(0 &- i), pos) }
                if case .float(let d) = operand.kind { return Syntax.Expr(.float(-d), pos) }
            }
            return Syntax.Expr(.unary(op, operand), pos)
        }
        return try parsePostfix()
    }

    mutating func parsePostfix() throws(CompileError) -> Syntax.Expr {
        var e = try parsePrimary()
        while true {
            if isPunct(".") {
                try advance()
                let (name, pos) = try identifier("a field or method name after '.'")
                e = Syntax.Expr(.member(e, name), pos)
            } else if isPunct("(") {
                let pos = current.pos
                try advance()
                var args: [Syntax.Expr] = []
                while !isPunct(")") {
                    if !args.isEmpty { try expectPunct(",") }
                    args.append(try parseExpr())
                }
                try advance()
                _ = pos
                e = Syntax.Expr(.call(e, args), e.pos)
            } else if isPunct("[") {
                let pos = current.pos
                try advance()
                if isPunct(":") {
                    try advance()
                    let hi = isPunct("]") ? nil : try parseExpr()
                    try expectPunct("]")
                    e = Syntax.Expr(.slice(e, nil, hi), pos)
                    continue
                }
                let index = try parseExpr()
                if isPunct(":") {
                    try advance()
                    let hi = isPunct("]") ? nil : try parseExpr()
                    try expectPunct("]")
                    e = Syntax.Expr(.slice(e, index, hi), pos)
                } else {
                    try expectPunct("]")
                    e = Syntax.Expr(.index(e, index), pos)
                }
            } else {
                return e
            }
        }
    }

    mutating func parsePrimary() throws(CompileError) -> Syntax.Expr {
        let pos = current.pos
        switch current.kind {
        case .int(let i): try advance(); return Syntax.Expr(.int(i), pos)
        case .float(let d): try advance(); return Syntax.Expr(.float(d), pos)
        case .string(let s): try advance(); return Syntax.Expr(.string(s), pos)
        case .identifier(let name):
            switch name {
            case "true": try advance(); return Syntax.Expr(.bool(true), pos)
            case "false": try advance(); return Syntax.Expr(.bool(false), pos)
            case "null": try advance(); return Syntax.Expr(.null, pos)
            default: try advance(); return Syntax.Expr(.identifier(name), pos)
            }
        case .punct("("):
            try advance()
            let e = try parseExpr()
            try expectPunct(")")
            return e
        case .punct("["):
            try advance()
            var items: [Syntax.Expr] = []
            while !isPunct("]") {
                if !items.isEmpty {
                    try expectPunct(",")
                    if isPunct("]") { break }
                }
                items.append(try parseExpr())
            }
            try advance()
            return Syntax.Expr(.list(items), pos)
        case .punct("{"):
            try advance()
            var entries: [(Syntax.Expr, Syntax.Expr)] = []
            while !isPunct("}") {
                if !entries.isEmpty {
                    try expectPunct(",")
                    if isPunct("}") { break }
                }
                let k = try parseExpr()
                try expectPunct(":")
                entries.append((k, try parseExpr()))
            }
            try advance()
            return Syntax.Expr(.map(entries), pos)
        case .punct("/"):
            return try parsePathLiteral(pos)
        default:
            throw error("an expression")
        }
    }

    /// `/databases/$(database)/documents/users/$(uid)`: the current token is the first '/'.
    mutating func parsePathLiteral(_ pos: SourcePos) throws(CompileError) -> Syntax.Expr {
        var segments: [[Syntax.PathPiece]] = []
        while true {
            var pieces: [Syntax.PathPiece] = []
            let segPos = lexer.pos
            while true {
                if lexer.peekByte() == 36, lexer.peekByte(1) == 40 {  // $(
                    lexer.advanceByte(); lexer.advanceByte()
                    try advance()
                    let e = try parseExpr()
                    guard isPunct(")") else { throw error("')' to close $(") }
                    pieces.append(.interpolation(e))
                } else if let b = lexer.peekByte(), Lexer.isPathChar(b) {
                    pieces.append(.text(lexer.pathText()))
                } else if lexer.peekByte() == 40, Array(lexer.bytes[lexer.offset...].prefix(9)) == Array("(default)".utf8) {
                    for _ in 0..<9 { lexer.advanceByte() }
                    pieces.append(.text("(default)"))
                } else {
                    break
                }
            }
            guard !pieces.isEmpty else {
                throw CompileError(segPos, "expected a path segment or $(expression) after '/'")
            }
            segments.append(pieces)
            guard lexer.peekByte() == 47 else { break }
            lexer.advanceByte()
        }
        try advance()
        return Syntax.Expr(.path(segments), pos)
    }
}
