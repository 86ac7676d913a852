/// A position in the rules source: 1-based line and column (columns count Unicode scalars).
struct SourcePos: Sendable, Equatable {
    var line: Int32
    var column: Int32
    init(_ line: Int, _ column: Int) {
        self.line = Int32(truncatingIfNeeded: line)
        self.column = Int32(truncatingIfNeeded: column)
    }
}

/// A syntax or semantic error found while compiling, before the file name is attached.
struct CompileError: Error {
    var pos: SourcePos
    var message: String
    init(_ pos: SourcePos, _ message: String) {
        self.pos = pos
        self.message = message
    }
}

enum TokenKind: Equatable {
    case identifier(String)
    case int(Int64)
    case float(Double)
    case string(String)
    /// Operators and punctuation: `{ } ( ) [ ] , ; : . ? = == != < <= > >= && || ! + - * / %`.
    case punct(String)
    case eof

    var display: String {
        switch self {
        case .identifier(let s): return "'\(s)'"
        case .int(let i): return "'\(i)'"
        case .float(let d): return "'\(d)'"
        case .string: return "a string"
        case .punct(let p): return "'\(p)'"
        case .eof: return "the end of the file"
        }
    }
}

struct Token {
    var kind: TokenKind
    var pos: SourcePos
}

/// Scans rules source on demand. The parser keeps one current token; the lexer's position is right after it,
/// which lets the parser switch to scanning path literals (`/users/$(uid)`) character by character.
struct Lexer {
    let bytes: [UInt8]
    var offset = 0
    var line = 1
    var column = 1

    init(_ source: String) { bytes = Array(source.utf8) }

    var pos: SourcePos { SourcePos(line, column) }

    func peekByte(_ ahead: Int = 0) -> UInt8? {
        offset + ahead < bytes.count ? bytes[offset + ahead] : nil
    }

    mutating func advanceByte() {
        let b = bytes[offset]
        offset += 1
        if b == 10 {
            line += 1
            column = 1
        } else if b & 0xC0 != 0x80 {
            column += 1
        }
    }

    mutating func skipTrivia() throws(CompileError) {
        while let b = peekByte() {
            if b == 32 || b == 9 || b == 10 || b == 13 {
                advanceByte()
            } else if b == 47, peekByte(1) == 47 {
                while let c = peekByte(), c != 10 { advanceByte() }
            } else if b == 47, peekByte(1) == 42 {
                let start = pos
                advanceByte(); advanceByte()
                while true {
                    guard let c = peekByte() else { throw CompileError(start, "unterminated /* comment") }
                    if c == 42, peekByte(1) == 47 { advanceByte(); advanceByte(); break }
                    advanceByte()
                }
            } else {
                return
            }
        }
    }

    static func isIdentStart(_ b: UInt8) -> Bool { b == 95 || (b | 0x20 >= 97 && b | 0x20 <= 122) }
    static func isIdentChar(_ b: UInt8) -> Bool { isIdentStart(b) || (b >= 48 && b <= 57) }
    static func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }

    mutating func next() throws(CompileError) -> Token {
        try skipTrivia()
        let start = pos
        guard let b = peekByte() else { return Token(kind: .eof, pos: start) }
        if Lexer.isIdentStart(b) {
            if (b == 98 || b == 66 || b == 114 || b == 82), let q = peekByte(1), q == 39 || q == 34 {
                let what = (b | 0x20) == 98 ? "bytes literals (b'...')" : "raw string literals (r'...')"
                throw CompileError(start, "\(what) are not supported")
            }
            var text: [UInt8] = []
            while let c = peekByte(), Lexer.isIdentChar(c) { text.append(c); advanceByte() }
            return Token(kind: .identifier(String(decoding: text, as: UTF8.self)), pos: start)
        }
        if Lexer.isDigit(b) || (b == 46 && peekByte(1).map(Lexer.isDigit) == true) {
            return try number(start)
        }
        if b == 39 || b == 34 { return Token(kind: .string(try string(quote: b, start)), pos: start) }
        advanceByte()
        let two: [UInt8: [UInt8]] = [61: [61], 33: [61], 60: [61], 62: [61], 38: [38], 124: [124]]
        if let seconds = two[b], let c = peekByte(), seconds.contains(c) {
            advanceByte()
            return Token(kind: .punct(String(decoding: [b, c], as: UTF8.self)), pos: start)
        }
        switch b {
        case 123, 125, 40, 41, 91, 93, 44, 59, 58, 46, 63, 61, 60, 62, 33, 43, 45, 42, 47, 37:
            return Token(kind: .punct(String(UnicodeScalar(b))), pos: start)
        case 38:
            throw CompileError(start, "'&' is not an operator (did you mean '&&'?)")
        case 124:
            throw CompileError(start, "'|' is not an operator (did you mean '||'?)")
        case 36:
            throw CompileError(start, "'$' is only allowed in a path literal, as $(expression)")
        default:
            var scalarText = String(UnicodeScalar(b))
            if b >= 0x80 {
                var seq: [UInt8] = [b]
                while let c = peekByte(), c & 0xC0 == 0x80 { seq.append(c); advanceByte() }
                scalarText = String(decoding: seq, as: UTF8.self)
            }
            throw CompileError(start, "unexpected character '\(scalarText)'")
        }
    }

    mutating func number(_ start: SourcePos) throws(CompileError) -> Token {
        var text: [UInt8] = []
        var isFloat = false
        if peekByte() == 48, let x = peekByte(1), x | 0x20 == 120 {
            advanceByte(); advanceByte()
            while let c = peekByte(), Lexer.isDigit(c) || (c | 0x20 >= 97 && c | 0x20 <= 102) { text.append(c); advanceByte() }
            guard let v = Int64(String(decoding: text, as: UTF8.self), radix: 16) else {
                throw CompileError(start, "malformed hexadecimal integer literal")
            }
            return Token(kind: .int(v), pos: start)
        }
        while let c = peekByte(), Lexer.isDigit(c) { text.append(c); advanceByte() }
        if peekByte() == 46, peekByte(1).map(Lexer.isDigit) == true {
            isFloat = true
            text.append(46); advanceByte()
            while let c = peekByte(), Lexer.isDigit(c) { text.append(c); advanceByte() }
        }
        if let e = peekByte(), e | 0x20 == 101 {
            var k = 1
            if let s = peekByte(1), s == 43 || s == 45 { k = 2 }
            if peekByte(k).map(Lexer.isDigit) == true {
                isFloat = true
                for _ in 0..<k { text.append(peekByte()!); advanceByte() }
                while let c = peekByte(), Lexer.isDigit(c) { text.append(c); advanceByte() }
            }
        }
        if let c = peekByte(), Lexer.isIdentStart(c) {
            throw CompileError(pos, "unexpected '\(String(UnicodeScalar(c)))' after a number")
        }
        let s = String(decoding: text, as: UTF8.self)
        if isFloat {
            guard let d = Double(s) else { throw CompileError(start, "malformed number '\(s)'") }
            return Token(kind: .float(d), pos: start)
        }
        guard let v = Int64(s) else { throw CompileError(start, "integer literal \(s) does not fit in 64 bits") }
        return Token(kind: .int(v), pos: start)
    }

    mutating func string(quote: UInt8, _ start: SourcePos) throws(CompileError) -> String {
        advanceByte()
        var out: [UInt8] = []
        while true {
            guard let c = peekByte(), c != 10 else { throw CompileError(start, "unterminated string literal") }
            if c == quote { advanceByte(); break }
            if c == 92 {
                let escPos = pos
                advanceByte()
                guard let e = peekByte() else { throw CompileError(start, "unterminated string literal") }
                advanceByte()
                switch e {
                case 110: out.append(10)
                case 116: out.append(9)
                case 114: out.append(13)
                case 98: out.append(8)
                case 102: out.append(12)
                case 118: out.append(11)
                case 97: out.append(7)
                case 48: out.append(0)
                case 92, 39, 34, 47, 63, 96: out.append(e)
                case 117, 85, 120:
                    let count = e == 117 ? 4 : (e == 85 ? 8 : 2)
                    var hex: [UInt8] = []
                    for _ in 0..<count {
                        guard let h = peekByte(), Lexer.isDigit(h) || (h | 0x20 >= 97 && h | 0x20 <= 102) else {
                            throw CompileError(escPos, "escape \\\(String(UnicodeScalar(e))) needs \(count) hexadecimal digits")
                        }
                        hex.append(h); advanceByte()
                    }
                    guard let v = UInt32(String(decoding: hex, as: UTF8.self), radix: 16), let scalar = UnicodeScalar(v) else {
                        throw CompileError(escPos, "escape \\\(String(UnicodeScalar(e)))\(String(decoding: hex, as: UTF8.self)) is not a Unicode scalar")
                    }
                    out.append(contentsOf: Array(String(scalar).utf8))
                default:
                    throw CompileError(escPos, "unknown escape sequence '\\\(String(UnicodeScalar(e)))'")
                }
                continue
            }
            out.append(c)
            advanceByte()
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Path scanning (the parser drives it after a '/')

    /// Characters allowed in a literal path segment.
    static func isPathChar(_ b: UInt8) -> Bool {
        isIdentChar(b) || b == 45 || b == 46 || b == 126 || b == 37 || b == 64 || b == 43 || b >= 0x80
    }

    /// Scans literal segment text at the current offset (possibly empty).
    mutating func pathText() -> String {
        var text: [UInt8] = []
        while let c = peekByte(), Lexer.isPathChar(c) { text.append(c); advanceByte() }
        return String(decoding: text, as: UTF8.self)
    }
}
