import HearthModel
import HearthProtocol

/// Carries a reader thread's response back to the loop thread (written before `done` runs; the worker
/// pool's lock orders it).
final class OffLoopRead: @unchecked Sendable {
    /// The response, in the writer it was built in (set by the work, which always runs before `done`:
    /// `WorkerPool`).
    var written: JSONWriter?
    /// The seq of the snapshot the response was read at (0 when the snapshot could not be taken).
    var seq: UInt64 = 0
    /// A DATA_LOSS the read met, for the loop to log.
    var damage: HearthError?
    /// The response is an error.
    var failed = false
}
