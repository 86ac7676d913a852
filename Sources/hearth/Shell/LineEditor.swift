#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal line editor for a terminal in raw mode, fed one input byte at a time: printable input,
/// Backspace/Delete, Left/Right/Home/End (also Ctrl-A/Ctrl-E), Up/Down history, Ctrl-U (clear), Ctrl-C
/// (drop the line), Ctrl-D (end on an empty line). Lines longer than the terminal width are not
/// re-wrapped. `printAbove` prints text (such as a pushed update) without disturbing the line being typed.
final class LineEditor {
    enum Event {
        case none
        case line(String)
        case interrupt
        case endOfInput
    }

    let prompt: String
    private var buffer: [UInt8] = []
    private var cursor = 0
    private var history: [[UInt8]] = []
    private var historyIndex = 0
    private var draft: [UInt8] = []
    private var escape: [UInt8]? = nil
    private var shown = false

    /// Most history entries kept.
    static let historyLimit = 500

    init(prompt: String) { self.prompt = prompt }

    /// Handles one byte of input; returns what it completed.
    func feed(_ byte: UInt8) -> Event {
        if var seq = escape {
            seq.append(byte)
            escape = seq
            return handleEscape(seq)
        }
        switch byte {
        case 27: escape = []
        case 13, 10:
            let line = String(decoding: buffer, as: UTF8.self)
            if !buffer.isEmpty && history.last != buffer {
                history.append(buffer)
                if history.count > LineEditor.historyLimit { history.removeFirst() }
            }
            historyIndex = history.count
            buffer = []
            cursor = 0
            write("\r\n")
            redraw()
            return .line(line)
        case 127, 8:
            guard cursor > 0 else { break }
            let start = previousBoundary(cursor)
            buffer.removeSubrange(start..<cursor)
            cursor = start
            redraw()
        case 1: cursor = 0; redraw()
        case 5: cursor = buffer.count; redraw()
        case 21: buffer = []; cursor = 0; redraw()
        case 3:
            write("^C\r\n")
            buffer = []
            cursor = 0
            historyIndex = history.count
            shown = false
            redraw()
            return .interrupt
        case 4:
            if buffer.isEmpty { write("\r\n"); shown = false; return .endOfInput }
            deleteForward()
        case 0..<32: break
        default:
            buffer.insert(byte, at: cursor)
            cursor += 1
            redraw()
        }
        return .none
    }

    private func handleEscape(_ seq: [UInt8]) -> Event {
        guard let first = seq.first else { return .none }
        guard first == UInt8(ascii: "[") || first == UInt8(ascii: "O") else { escape = nil; return .none }
        guard seq.count >= 2, let last = seq.last, last >= 0x40 && last <= 0x7E else {
            if seq.count > 8 { escape = nil }
            return .none
        }
        escape = nil
        switch (last, seq.dropFirst().dropLast().map { Character(UnicodeScalar($0)) }) {
        case (UInt8(ascii: "A"), _): recall(-1)
        case (UInt8(ascii: "B"), _): recall(+1)
        case (UInt8(ascii: "C"), _): if cursor < buffer.count { cursor = nextBoundary(cursor); redraw() }
        case (UInt8(ascii: "D"), _): if cursor > 0 { cursor = previousBoundary(cursor); redraw() }
        case (UInt8(ascii: "H"), _): cursor = 0; redraw()
        case (UInt8(ascii: "F"), _): cursor = buffer.count; redraw()
        case (UInt8(ascii: "~"), let params):
            switch String(params) {
            case "1", "7": cursor = 0; redraw()
            case "4", "8": cursor = buffer.count; redraw()
            case "3": deleteForward()
            default: break
            }
        default: break
        }
        return .none
    }

    private func deleteForward() {
        guard cursor < buffer.count else { return }
        buffer.removeSubrange(cursor..<nextBoundary(cursor))
        redraw()
    }

    private func recall(_ step: Int) {
        let target = historyIndex + step
        guard target >= 0 && target <= history.count else { return }
        if historyIndex == history.count { draft = buffer }
        historyIndex = target
        buffer = target == history.count ? draft : history[target]
        cursor = buffer.count
        redraw()
    }

    /// UTF-8 aware cursor steps (skip continuation bytes).
    private func previousBoundary(_ i: Int) -> Int {
        var j = i - 1
        while j > 0 && buffer[j] & 0xC0 == 0x80 { j -= 1 }
        return max(0, j)
    }

    private func nextBoundary(_ i: Int) -> Int {
        var j = i + 1
        while j < buffer.count && buffer[j] & 0xC0 == 0x80 { j += 1 }
        return min(buffer.count, j)
    }

    /// Draws the prompt and the line, and puts the cursor in place.
    func redraw() {
        var out = "\r" + prompt + String(decoding: buffer, as: UTF8.self) + "\u{1B}[K"
        let after = buffer[cursor...].reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
        if after > 0 { out += "\u{1B}[\(after)D" }
        write(out)
        shown = true
    }

    /// Prints `text` (and a newline) above the line being edited, then redraws the line.
    func printAbove(_ text: String) {
        write("\r\u{1B}[K" + text.replacingNewlines + "\r\n")
        redraw()
    }

    /// Erases the prompt line (before exiting).
    func hide() {
        if shown { write("\r\u{1B}[K") }
        shown = false
    }

    private func write(_ text: String) {
        Console.out(text)
        Console.flush()
    }
}

extension String {
    /// `\n` as `\r\n`, for writing to a terminal whose output processing might be off.
    var replacingNewlines: String { split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\r\n") }
}
