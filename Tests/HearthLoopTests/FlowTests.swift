import Testing
@testable import HearthLoop

@Suite("Output draining and read flow control")
struct FlowTests {
    @Test("a large send arrives whole and onDrain fires")
    func largeSendDrains() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let payload = pattern(8 << 20)
        var drained = 0
        var pendingAfterSend = 0
        var pendingAtDrain = -1
        var received: [UInt8] = []
        received.reserveCapacity(payload.count)
        func maybeStop() { if drained > 0 && received.count >= payload.count { loop.stop() } }
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            connection.onDrain = {
                drained += 1
                pendingAtDrain = connection.pendingOutputBytes
                connection.onDrain = nil
                maybeStop()
            }
            connection.send(payload)
            pendingAfterSend = connection.pendingOutputBytes
        }
        connectClient(loop, port: listener.port) { client in
            client.onRead = { bytes in
                received += bytes
                maybeStop()
            }
            client.startReading()
        }
        runBounded(loop, timeoutMs: 30_000)
        #expect(pendingAfterSend == payload.count)
        #expect(drained == 1)
        #expect(pendingAtDrain == 0)
        #expect(received == payload)
    }

    @Test("pauseReading stops delivery and resumeReading resumes it")
    func pauseAndResume() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var server: TCPConnection?
        var serverReceived: [UInt8] = []
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            server = connection
            connection.onRead = { bytes in
                serverReceived += bytes
                if serverReceived == Array("a".utf8) { connection.pauseReading() }
                if serverReceived.count >= 2 { loop.stop() }
            }
            connection.startReading()
        }
        var receivedWhilePaused: [UInt8] = []
        connectClient(loop, port: listener.port) { client in
            client.send("a")
            loop.timer(after: 50) { client.send("b") }
            loop.timer(after: 250) {
                receivedWhilePaused = serverReceived
                server?.resumeReading()
            }
        }
        runBounded(loop)
        #expect(receivedWhilePaused == Array("a".utf8))
        #expect(serverReceived == Array("ab".utf8))
    }

    @Test("graceful close flushes pending output before the peer sees EOF")
    func gracefulCloseFlushes() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let payload = pattern(4 << 20)
        var serverClosed: [LoopError?] = []
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            connection.onClose = { serverClosed.append($0) }
            connection.send(payload)
            connection.close()
            connection.send("ignored after close")
            #expect(!connection.isOpen)
        }
        var received: [UInt8] = []
        var clientClosed: [LoopError?] = []
        connectClient(loop, port: listener.port) { client in
            client.onRead = { received += $0 }
            client.onClose = { error in
                clientClosed.append(error)
                loop.timer(after: 50) { loop.stop() }
            }
            client.startReading()
        }
        runBounded(loop, timeoutMs: 30_000)
        #expect(received == payload)
        #expect(clientClosed.count == 1)
        #expect(clientClosed.first.map { $0 == nil } == true)
        #expect(serverClosed.count == 1)
        #expect(serverClosed.first.map { $0 == nil } == true)
    }

    @Test("graceful close gives up after the deadline when the peer never reads")
    func closeDeadline() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        loop.closeDeadlineMs = 100
        var closeError: LoopError?
        var closes = 0
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            connection.onClose = { error in
                closes += 1
                closeError = error
                loop.stop()
            }
            connection.send([UInt8](repeating: 0x78, count: 64 << 20))   // far more than socket buffers hold
            connection.close()
        }
        var client: TCPConnection?
        connectClient(loop, port: listener.port) { client = $0 }   // never reads
        runBounded(loop)
        #expect(closes == 1)
        #expect(closeError?.name == "ETIMEDOUT")
        #expect(client != nil)
    }

    @Test("an expedited connection is written first in its flush pass; the others keep their order, and each its bytes")
    func expeditedFlushFirst() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var accepted: [TCPConnection] = []
        var clients: [TCPConnection] = []
        var flushed: [String] = []
        var received: [String: [UInt8]] = [:]
        let names = ["a", "b", "c", "d"]
        func sendAll() {
            // One turn: a, b, c and d buffer output; c and then a are expedited (a after its send, c before
            // a second send of its own), twice for c.
            for (i, c) in accepted.enumerated() {
                c.onDrain = { flushed.append(names[i]) }
                c.send(names[i] + "1")
            }
            accepted[2].expedite()
            accepted[2].send("c2")
            accepted[2].expedite()
            accepted[0].expedite()
        }
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            accepted.append(connection)
            if accepted.count == names.count { loop.timer(after: 0) { sendAll() } }
        }
        for name in names {
            connectClient(loop, port: listener.port) { client in
                clients.append(client)
                client.onRead = { bytes in
                    received[name, default: []] += bytes
                    if received.values.reduce(0, { $0 + $1.count }) == 10 { loop.stop() }
                }
                client.startReading()
            }
        }
        runBounded(loop)
        // Named by the accepted connection that wrote them.
        #expect(flushed == ["c", "a", "b", "d"])
        let lines: [String] = received.values.map { String(decoding: $0, as: UTF8.self) }.sorted()
        #expect(lines == ["a1", "b1", "c1c2", "d1"])
    }

    @Test("an expedite made while a write is in flight holds: the rest is expedited once that write completes")
    func expediteDuringAWriteInFlight() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let payload = pattern(8 << 20)
        var server: TCPConnection?
        var received = 0
        var expectedTotal = Int.max
        var expeditedWhileInFlight = false
        // What the before-poll hook (run just before each flush pass) saw once the large write had completed
        // and only the expedited rest was pending: whether the connection was in the urgent list.
        var urgentWhenRestPending: [Bool] = []
        let hook = loop.beforePoll {
            guard expeditedWhileInFlight, let c = server, c.pendingOutputBytes == 2 else { return }
            urgentWhenRestPending.append(c.isUrgent)
        }
        defer { hook.cancel() }
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            server = connection
            connection.send(payload)
            // One write to the kernel takes part of the payload (a socket buffer holds a few MiB at most); a
            // uv_write holds the rest until the client has read enough.
            connection.flushNow()
            let before = connection.pendingOutputBytes
            connection.send("a2")
            connection.expedite()
            expeditedWhileInFlight = before > 0 && before < payload.count
            expectedTotal = payload.count + 2
        }
        connectClient(loop, port: listener.port) { client in
            client.onRead = { bytes in
                received += bytes.count
                if received == expectedTotal { loop.stop() }
            }
            client.startReading()
        }
        runBounded(loop, timeoutMs: 30_000)
        #expect(expeditedWhileInFlight)
        #expect(received == payload.count + 2)
        #expect(!urgentWhenRestPending.isEmpty && urgentWhenRestPending.allSatisfy { $0 }, "urgent at each pass with the rest pending: \(urgentWhenRestPending)")
    }

    @Test("a pass writes at most its budget; the rest go in order in the next passes, after a poll; more for one left over ends the bound",
          arguments: [false, true])
    func flushPassesAreBounded(moreForALeftover: Bool) throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let limit = 4   // a few descriptors, not the default's 2 × 128 + 44 per test run in parallel
        loop.flushBudget = limit
        let count = 2 * limit + 3
        var accepted: [TCPConnection] = []
        var drained: [Int] = []
        var drainedAtPass: [Int] = []        // drains counted at the start of each pass (the hooks run first)
        var drainedWhenTimerFired = -1
        var received = 0
        let hook = loop.beforePoll { if drainedAtPass.last != drained.count { drainedAtPass.append(drained.count) } }
        defer { hook.cancel() }
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            accepted.append(connection)
            guard accepted.count == count else { return }
            loop.timer(after: 0) {
                // One turn dirties every connection. A timer made in the first pass fires before the second.
                for (i, c) in accepted.enumerated() {
                    c.onDrain = {
                        drained.append(i)
                        guard i == 0 else { return }
                        loop.timer(after: 0) {
                            drainedWhenTimerFired = drained.count
                            if moreForALeftover { accepted[count - 1].send("y") }
                        }
                    }
                    c.send("x")
                }
            }
        }
        for _ in 0..<count {
            connectClient(loop, port: listener.port) { client in
                client.onRead = { bytes in
                    received += bytes.count
                    if received == count + (moreForALeftover ? 1 : 0) { loop.stop() }
                }
                client.startReading()
            }
        }
        runBounded(loop, timeoutMs: 30_000)
        #expect(drained == Array(0..<count), "every connection once, in the order they were dirtied")
        // The hook runs on every iteration: once all are written it may note `count` before the loop stops.
        let passes = drainedAtPass.filter { $0 < count }
        if moreForALeftover {
            #expect(passes.suffix(2) == [0, limit], "passes: \(drainedAtPass)")
        } else {
            #expect(passes.suffix(3) == [0, limit, 2 * limit], "passes: \(drainedAtPass)")
        }
        #expect(drainedWhenTimerFired == limit, "the loop polled and ran its timers between the passes")
    }

    @Test("a connection closed while queued for a later pass stays alive until its entry is taken")
    func closedWhileQueuedStaysAlive() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        loop.flushBudget = 4
        let count = 2 * loop.flushBudget + 3
        var accepted: [TCPConnection] = []
        weak var victim: TCPConnection?
        var aliveAfterClose: Bool?
        var received = 0
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            accepted.append(connection)
            guard accepted.count == count else { return }
            loop.timer(after: 0) {
                for c in accepted { c.send("x") }
                // Made in the first pass, fires before the second: the last connection is queued for the third.
                accepted[0].onDrain = {
                    loop.timer(after: 0) {
                        let last = accepted.removeLast()
                        victim = last
                        last.onClose = { _ in
                            // The close callback ran before the third pass: only the loop's entry holds it now.
                            loop.timer(after: 0) { aliveAfterClose = victim != nil }
                        }
                        last.abort()
                    }
                }
            }
        }
        for _ in 0..<count {
            connectClient(loop, port: listener.port) { client in
                client.onRead = { bytes in
                    received += bytes.count
                    if received == count - 1 { loop.timer(after: 20) { loop.stop() } }
                }
                client.startReading()
            }
        }
        runBounded(loop, timeoutMs: 30_000)
        #expect(received == count - 1)
        #expect(aliveAfterClose == true, "kept alive while its entry was queued")
        #expect(victim == nil, "released once the entry was taken")
    }
}
