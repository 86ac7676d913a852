import HearthModel

/// Carries a reader thread's response back to the loop thread (written before `done` runs; the worker
/// pool's lock orders it).
final class OffLoopRead: @unchecked Sendable {
    var line: [UInt8] = []
    /// The seq of the snapshot the response was read at (0 when the snapshot could not be taken).
    var seq: UInt64 = 0
    /// A DATA_LOSS the read met, for the loop to log.
    var damage: HearthError?
    /// The response is an error.
    var failed = false
}
