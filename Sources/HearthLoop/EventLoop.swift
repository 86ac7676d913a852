import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A single-threaded libuv event loop (its own `uv_loop_t`, never the default loop).
///
/// Threading: every method and every object created from a loop must be used on the thread that calls
/// ``run()`` (the *loop thread*), except ``Wakeup/signal()`` and the `work` closure given to
/// ``submit(_:done:)``. Callbacks are always invoked on the loop thread.
///
/// Lifetime: handles (listeners, connections, timers, ...) keep themselves and the loop alive until they
/// are closed. ``shutdown()`` closes whatever is still open and releases the loop. See docs/loop.md.
public final class EventLoop {
    let uvLoop: UnsafeMutablePointer<uv_loop_t>
    /// Shared by every connection's alloc callback; safe because reads happen one at a time on this thread.
    let readBuffer: UnsafeMutableRawPointer
    static let readBufferSize = 64 * 1024

    /// Runs hooks and flushes dirty connections before each poll. Referenced only while output is pending.
    private let prepareHandle: UnsafeMutablePointer<uv_prepare_t>
    /// Started only while connections are still dirty after a flush pass, so the poll does not block.
    private let idleHandle: UnsafeMutablePointer<uv_idle_t>
    private var idleActive = false
    /// Set by `requestTurn()`; cleared when a before-poll pass starts.
    private var turnRequested = false

    private var hooks: [LoopHook] = []
    // @exclusivity(unchecked): appended to on every send that dirties a connection; loop thread only, and never
    // modified in place across a call (docs/architecture.md, "Decisions").
    // The lists hold their connections unretained (no reference counting per send: a fan-out dirties a
    // connection per delivery). A connection lives while libuv holds its handle; one whose close callback
    // comes while entries for it are still queued (`TCPConnection.queuedEntries`) is kept in
    // `closedWhileQueued` until they have been taken.
    @exclusivity(unchecked) private var dirty: [Unmanaged<TCPConnection>] = []
    /// The dirty connections being written, from `flushingHead` on: a pass writes at most
    /// `connectionsPerPass` of them, and the rest go first in the next pass.
    private var flushing: [Unmanaged<TCPConnection>] = []
    private var flushingHead = 0
    /// Flush passes begun: a connection notes the one it was queued in (`TCPConnection.queuedInPass`).
    private(set) var passCount: UInt64 = 0
    /// More output came for a connection left over from an earlier pass: the producers are ahead of the
    /// writing, so passes write every dirty connection, whatever `connectionsPerPass` says, until none is
    /// left dirty at the end of one.
    var leftoversGrew = false
    /// Connections flushed first in the next pass (`TCPConnection.expedite()`): those holding an answer a
    /// client waits for, ahead of those holding only pushed lines.
    @exclusivity(unchecked) private var urgent: [Unmanaged<TCPConnection>] = []
    private var flushingUrgent: [Unmanaged<TCPConnection>] = []
    private var closedWhileQueued: [TCPConnection] = []

    private var isRunning = false
    /// Set by `shutdown()`; factories hand out inert objects afterwards.
    private(set) var isShutDown = false
    private var finished = false

    /// Output buffer capacity a connection keeps after its output drains; larger buffers are freed.
    /// Keeps idle connections small. Default 16 KiB.
    @exclusivity(unchecked) public var outputRetainLimit = 16 * 1024   // read on every flush

    /// How long a graceful ``TCPConnection/close()`` may wait for pending output before aborting. Default 2000 ms.
    public var closeDeadlineMs: UInt64 = 2000

    /// Creates and initialises a private libuv loop. Also ignores `SIGPIPE` process-wide, so writing to a
    /// vanished peer reports `EPIPE` instead of killing the process.
    public init() throws(LoopError) {
        _ = signal(SIGPIPE, SIG_IGN)
        uvLoop = allocZeroed(uv_loop_t.self)
        let status = uv_loop_init(uvLoop)
        if status < 0 {
            free(uvLoop)
            throw LoopError(code: status, operation: "uv_loop_init")
        }
        readBuffer = UnsafeMutableRawPointer.allocate(byteCount: Self.readBufferSize, alignment: 16)
        prepareHandle = allocZeroed(uv_prepare_t.self)
        idleHandle = allocZeroed(uv_idle_t.self)
        uvLoop.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_prepare_init(uvLoop, prepareHandle)
        uv_prepare_start(prepareHandle, loopPrepareCallback)
        uv_unref(asHandle(prepareHandle))
        uv_idle_init(uvLoop, idleHandle)
    }

    deinit {
        // Every open handle retains the loop, so only the loop's own handles can remain here.
        if !finished {
            isShutDown = true
            uv_walk(uvLoop, shutdownWalkCallback, nil)
            finish()
        }
    }

    // MARK: Running

    /// Runs the loop until ``stop()`` is called or nothing is left to keep it alive (no active, referenced
    /// handle and no pending request). If ``shutdown()`` was called during the run, completes it.
    public func run() {
        guard !finished else { return }
        isRunning = true
        uv_run(uvLoop, UV_RUN_DEFAULT)
        isRunning = false
        if isShutDown { finish() }
    }

    /// Runs one loop iteration: waits for I/O unless `nowait`. Returns `true` if the loop is still alive.
    @discardableResult
    public func runOnce(nowait: Bool = false) -> Bool {
        guard !finished else { return false }
        isRunning = true
        let alive = uv_run(uvLoop, nowait ? UV_RUN_NOWAIT : UV_RUN_ONCE) != 0
        isRunning = false
        if isShutDown { finish() }
        return alive
    }

    /// Makes ``run()`` return after the current iteration. Loop thread only; closes nothing.
    /// Called while the loop is not running, it makes the next `run()` return after one iteration.
    public func stop() {
        guard !finished else { return }
        uv_stop(uvLoop)
    }

    /// Closes every open handle (connections are aborted, dropping pending output), lets their close
    /// callbacks and pending work finish, then closes the libuv loop and frees its memory. Idempotent.
    /// Safe to call from a callback inside ``run()``: the rest happens when `run()` returns.
    /// After shutdown every factory method returns inert objects and connects fail with `ECANCELED`.
    public func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        hooks.removeAll()
        uv_walk(uvLoop, shutdownWalkCallback, nil)
        if !isRunning { finish() }
    }

    private func finish() {
        guard !finished else { return }
        // Close callbacks may open new handles (user code): keep walking until libuv agrees it is idle.
        var status = UV_EBUSY.rawValue
        for _ in 0..<16 {
            while uv_run(uvLoop, UV_RUN_DEFAULT) != 0 {}
            status = uv_loop_close(uvLoop)
            if status != UV_EBUSY.rawValue { break }
            uv_walk(uvLoop, shutdownWalkCallback, nil)
        }
        finished = true
        dirty.removeAll()
        flushing.removeAll()
        urgent.removeAll()
        flushingUrgent.removeAll()
        flushingHead = 0
        closedWhileQueued.removeAll()
        if status == 0 {
            readBuffer.deallocate()
            free(uvLoop)
        }
        // On a persistent EBUSY the loop memory is deliberately leaked: freeing it under live handles
        // would be a use-after-free.
    }

    /// `true` after ``shutdown()`` has been called.
    public var isClosed: Bool { isShutDown }

    // MARK: Time

    /// The loop's cached clock in milliseconds (`uv_now`), updated at the start of each iteration.
    public var now: UInt64 { finished ? 0 : uv_now(uvLoop) }

    /// A monotonic high-resolution clock in nanoseconds (`uv_hrtime`). Callable from any thread.
    public func hrtimeNanos() -> UInt64 { uv_hrtime() }

    /// The same clock, from any thread.
    public static func hrtimeNanos() -> UInt64 { uv_hrtime() }

    /// Refreshes ``now`` (`uv_update_time`); useful after long synchronous work inside a callback.
    public func updateTime() { if !finished { uv_update_time(uvLoop) } }

    // MARK: Factories

    /// Starts a TCP listener on `host:port` (numeric address or `"localhost"`; port 0 picks a free port,
    /// see ``TCPListener/port``). Accepted connections get `TCP_NODELAY`, start with reading paused, and
    /// are handed to `onAccept`. Throws a ``LoopError`` (for example `EADDRINUSE`) if binding fails.
    public func listen(host: String, port: Int, backlog: Int32 = 511,
                       onAccept: @escaping (TCPConnection) -> Void) throws(LoopError) -> TCPListener {
        try TCPListener(loop: self, host: host, port: port, backlog: backlog, onAccept: onAccept)
    }

    /// Connects to `host:port` (numeric address or `"localhost"`; no DNS). `done` is called exactly once,
    /// on the loop thread and never before `connect` returns, with a connection (`TCP_NODELAY` set,
    /// reading paused) or the error (for example `ECONNREFUSED`, or `EINVAL` for a bad address).
    /// After ``shutdown()`` it fails at once with `ECANCELED`.
    public func connect(host: String, port: Int, _ done: @escaping (Result<TCPConnection, LoopError>) -> Void) {
        TCPConnection.connect(loop: self, host: host, port: port, done)
    }

    /// Calls `fire` after `ms` milliseconds, then every `repeat` ms if `repeat > 0`. See ``LoopTimer``.
    @discardableResult
    public func timer(after ms: UInt64, repeat: UInt64 = 0, _ fire: @escaping () -> Void) -> LoopTimer {
        let t = LoopTimer(loop: self, fire)
        t.reset(after: ms, repeat: `repeat`)
        return t
    }

    /// Calls `fire` on the loop thread whenever signal `signum` arrives, until ``SignalWatcher/stop()``.
    /// An active watcher keeps ``run()`` from returning.
    public func onSignal(_ signum: Int32, _ fire: @escaping () -> Void) -> SignalWatcher {
        SignalWatcher(loop: self, signum: signum, fire)
    }

    /// Creates a thread-safe wakeup (`uv_async_t`): ``Wakeup/signal()`` may be called from any thread and
    /// `fire` runs soon after on the loop thread; several signals before it runs coalesce into one call.
    /// An open wakeup keeps ``run()`` from returning until ``Wakeup/close()``.
    public func makeWakeup(_ fire: @escaping () -> Void) -> Wakeup {
        Wakeup(loop: self, fire)
    }

    /// Runs `work` on libuv's thread pool, then `done` on the loop thread (`uv_queue_work`). Pending work
    /// keeps the loop alive. `work` must not touch loop objects. After ``shutdown()`` both run inline.
    public func submit(_ work: @escaping @Sendable () -> Void, done: @escaping () -> Void) {
        WorkItem.submit(loop: self, work: work, done: done)
    }

    /// Registers `fire` to run once per loop iteration right before the loop blocks for I/O, in
    /// registration order, before connection output is flushed (so output produced by hooks goes out in
    /// the same turn). Hooks do not keep the loop alive. Cancel with ``LoopHook/cancel()``.
    @discardableResult
    public func beforePoll(_ fire: @escaping () -> Void) -> LoopHook {
        let hook = LoopHook(loop: self, fire)
        if !isShutDown { hooks.append(hook) } else { hook.isActive = false }
        return hook
    }

    /// Makes the current before-poll pass end without blocking in poll, so that the hooks run again at once:
    /// for work queued during a pass, possibly after the hook that hands it on has run. Called outside a
    /// pass it does nothing more than the coming pass would. Loop thread only.
    public func requestTurn() { turnRequested = true }

    func removeHook(_ hook: LoopHook) {
        if let i = hooks.firstIndex(where: { $0 === hook }) { hooks.remove(at: i) }
    }

    // MARK: Output flushing

    /// Queues `connection` for a before-poll flush (the next one, unless connections are left over from a
    /// bounded pass: then after them). O(1); callers keep a per-connection flag.
    func markDirty(_ connection: TCPConnection) {
        if dirty.isEmpty && !isShutDown { uv_ref(asHandle(prepareHandle)) }
        connection.queuedEntries += 1
        dirty.append(Unmanaged.passUnretained(connection))
    }

    /// `connection`'s handle closed while entries for it are queued: it stays alive until they are taken.
    func keepUntilFlushed(_ connection: TCPConnection) {
        closedWhileQueued.append(connection)
    }

    /// How many dirty connections a pass writes, beyond the expedited ones (`connectionsPerPass` by default;
    /// set for tests).
    var flushBudget = EventLoop.connectionsPerPass
    /// Whether passes are bounded by `flushBudget`. The owner turns it off when a poll between passes would
    /// cost the fan-out's tail more than it gains: the daemon keeps it on only while the last batch it took is
    /// one small commit (`Server.boundsFlushPasses(after:)`).
    public var boundsFlushPasses = true

    /// How many dirty connections a pass writes by default, beyond the expedited ones. The rest are written in
    /// the next passes, each after a poll that does not block: a request that came meanwhile is read between
    /// them (with one write in flight, the next write starts its commit while the previous one's fan-out is
    /// still being written, instead of after it). Once more output comes for a connection left over (that commit's
    /// fan-out), passes write all that is dirty until nothing is left dirty at the end of one: output is at
    /// most one burst ahead of the writing, so its latency stays bounded when writes keep coming. Each
    /// connection's bytes keep their order whatever the pass.
    static let connectionsPerPass = 128

    /// Queues `connection` to be flushed at the start of the next pass, ahead of the other dirty ones (it is
    /// dirty too; the caller keeps a per-connection flag).
    func markUrgent(_ connection: TCPConnection) {
        if dirty.isEmpty && urgent.isEmpty && !isShutDown { uv_ref(asHandle(prepareHandle)) }
        connection.queuedEntries += 1
        urgent.append(Unmanaged.passUnretained(connection))
    }

    /// The prepare callback body: hooks, then one flush pass: the expedited connections, then up to
    /// `connectionsPerPass` of the other dirty ones.
    func beforePollTurn() {
        turnRequested = false
        if !hooks.isEmpty {
            let current = hooks
            for hook in current where hook.isActive { hook.fire?() }
        }
        // After the hooks: what they send belongs with what the poll before them sent.
        passCount &+= 1
        if !urgent.isEmpty {
            swap(&urgent, &flushingUrgent)
            for entry in flushingUrgent {
                entry._withUnsafeGuaranteedRef { connection in
                    connection.queuedEntries -= 1
                    connection.isUrgent = false
                    guard connection.isDirty else { return }
                    connection.isDirty = false
                    connection.flush()
                }
            }
            flushingUrgent.removeAll(keepingCapacity: true)
        }
        // Connections dirtied during the pass wait for the next one (they go behind those left over).
        if flushing.isEmpty && !dirty.isEmpty { swap(&dirty, &flushing) }
        var budget = leftoversGrew || !boundsFlushPasses ? Int.max : flushBudget
        while flushingHead < flushing.count && budget > 0 {
            flushing[flushingHead]._withUnsafeGuaranteedRef { connection in
                connection.queuedEntries -= 1
                // An expedited connection is in both lists: written in the urgent part, skipped here unless it
                // was dirtied again since (then it is written again, in its first place).
                guard connection.isDirty else { return }
                connection.isDirty = false
                if connection.flush() { budget -= 1 }   // one with a write in flight, or closed, costs nothing
            }
            flushingHead += 1
        }
        if flushingHead == flushing.count {
            if !flushing.isEmpty { flushing.removeAll(keepingCapacity: true) }
            flushingHead = 0
            if dirty.isEmpty { leftoversGrew = false }   // caught up: passes are bounded again
        }
        if !closedWhileQueued.isEmpty { closedWhileQueued.removeAll { $0.queuedEntries == 0 } }
        if isShutDown { return }
        if dirty.isEmpty && urgent.isEmpty && flushing.isEmpty && !turnRequested {
            uv_unref(asHandle(prepareHandle))
            if idleActive { uv_idle_stop(idleHandle); idleActive = false }
        } else if !idleActive {
            // Connections left for the next pass or re-dirtied (e.g. by onDrain), or work queued during the
            // pass: do not block in poll.
            uv_idle_start(idleHandle, loopIdleCallback)
            idleActive = true
        }
    }
}

/// Runs hooks and flushes output once per iteration (`uv_prepare_t`).
private func loopPrepareCallback(_ handle: UnsafeMutablePointer<uv_prepare_t>?) {
    guard let data = handle?.pointee.loop.pointee.data else { return }
    Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue().beforePollTurn()
}

/// Exists only so an active idle handle makes libuv poll with a zero timeout.
private func loopIdleCallback(_ handle: UnsafeMutablePointer<uv_idle_t>?) {}

/// `uv_walk` callback used by shutdown: closes each open handle through its Swift owner.
private func shutdownWalkCallback(_ handle: UnsafeMutablePointer<uv_handle_t>?, _ arg: UnsafeMutableRawPointer?) {
    guard let handle, uv_is_closing(handle) == 0 else { return }
    guard let data = handle.pointee.data else {
        uv_close(handle, freeHandleOnly)   // the loop's own prepare/idle handles
        return
    }
    let object = Unmanaged<AnyObject>.fromOpaque(data).takeUnretainedValue()
    if let owned = object as? LoopHandleOwner {
        owned.closeForShutdown()
    } else {
        uv_close(handle, releaseOwnerAndFree)
    }
}
