/// The wire form of a database's history ID (`DocumentStore.historyID`): 16 lowercase hex digits, a string so
/// that no client's JSON numbers lose bits of it.
public enum HistoryToken {
    public static func encode(_ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The ID, or nil when `text` is not 16 hex digits.
    public static func decode(_ text: String) -> UInt64? {
        guard text.utf8.count == 16, text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else { return nil }
        return UInt64(text, radix: 16)
    }
}
