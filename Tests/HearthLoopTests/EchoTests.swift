import Testing
@testable import HearthLoop

@Suite("TCP echo")
struct EchoTests {
    @Test("echo round trip over 127.0.0.1 on an ephemeral port")
    func echoRoundTrip() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let listener = try startEchoServer(loop)
        #expect(listener.port > 0)
        #expect(listener.address == "127.0.0.1:\(listener.port)")
        var received: [UInt8] = []
        var clientPeer = ""
        connectClient(loop, port: listener.port) { client in
            clientPeer = client.peer
            client.onRead = { bytes in
                received += bytes
                if received.count >= 5 { loop.stop() }
            }
            client.startReading()
            client.send(Array("hello".utf8))
        }
        runBounded(loop)
        #expect(received == Array("hello".utf8))
        #expect(clientPeer == "127.0.0.1:\(listener.port)")
    }

    @Test("accepted connections report the peer address")
    func acceptedPeer() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var serverPeer = ""
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            serverPeer = connection.peer
            loop.stop()
        }
        connectClient(loop, port: listener.port) { _ in }
        runBounded(loop)
        #expect(serverPeer.hasPrefix("127.0.0.1:"))
        #expect(serverPeer != "127.0.0.1:\(listener.port)")
    }

    @Test("many pipelined messages arrive intact and in order")
    func pipelined() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let listener = try startEchoServer(loop)
        var expected: [UInt8] = []
        for i in 0..<20_000 { expected += Array("message number \(i)\n".utf8) }
        var received: [UInt8] = []
        received.reserveCapacity(expected.count)
        connectClient(loop, port: listener.port) { client in
            client.onRead = { bytes in
                received += bytes
                if received.count >= expected.count { loop.stop() }
            }
            client.startReading()
            for i in 0..<20_000 { client.send("message number \(i)\n") }
            // Everything is buffered until the before-poll flush.
            #expect(client.pendingOutputBytes == expected.count)
        }
        runBounded(loop)
        #expect(received.count == expected.count)
        #expect(received == expected)
    }

    @Test("8 MiB echoed back whole through partial writes")
    func largeEcho() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let listener = try startEchoServer(loop)
        let payload = pattern(8 << 20)
        var received: [UInt8] = []
        received.reserveCapacity(payload.count)
        connectClient(loop, port: listener.port) { client in
            client.onRead = { bytes in
                received += bytes
                if received.count >= payload.count { loop.stop() }
            }
            client.startReading()
            client.send(payload)
        }
        runBounded(loop, timeoutMs: 30_000)
        #expect(received.count == payload.count)
        #expect(received == payload)
    }

    @Test("send(reserving:) serialises straight into the output buffer")
    func sendReserving() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let listener = try startEchoServer(loop)
        var received: [UInt8] = []
        connectClient(loop, port: listener.port) { client in
            client.onRead = { bytes in
                received += bytes
                if received.count >= 3 { loop.stop() }
            }
            client.startReading()
            client.send(reserving: 16) { buffer in
                buffer[0] = 0x61; buffer[1] = 0x62; buffer[2] = 0x63
                return 3
            }
        }
        runBounded(loop)
        #expect(received == Array("abc".utf8))
    }
}
