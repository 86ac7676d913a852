import Testing
import Foundation
@testable import HearthLoop

@Suite("Cross-thread entry points")
struct ThreadTests {
    @Test("a wakeup signalled from another thread runs its callback on the loop thread")
    func wakeupFromThread() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let loopThread = currentThreadID()
        let signallerThread = Recorder<UInt>(0)
        var firedOnThread: UInt = 0
        var fires = 0
        var wakeup: Wakeup?
        wakeup = loop.makeWakeup {
            fires += 1
            firedOnThread = currentThreadID()
            wakeup?.close()
            loop.stop()
        }
        let sendable = wakeup!
        Thread.detachNewThread {
            signallerThread.set(currentThreadID())
            for _ in 0..<100 { sendable.signal() }   // coalesce into few calls
        }
        runBounded(loop)
        #expect(fires == 1)
        #expect(firedOnThread == loopThread)
        #expect(signallerThread.get() != loopThread)
        #expect(signallerThread.get() != 0)
    }

    @Test("submit runs work off the loop thread and done on it")
    func submitWork() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let loopThread = currentThreadID()
        let workThread = Recorder<UInt>(0)
        var doneThread: UInt = 0
        var completed = 0
        for _ in 0..<8 {
            loop.submit({
                workThread.set(currentThreadID())
                usleep(1000)
            }, done: {
                completed += 1
                doneThread = currentThreadID()
                if completed == 8 { loop.stop() }
            })
        }
        runBounded(loop)
        #expect(completed == 8)
        #expect(workThread.get() != 0)
        #expect(workThread.get() != loopThread)
        #expect(doneThread == loopThread)
    }

    @Test("pending work alone keeps run() going until done has run")
    func workKeepsLoopAlive() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var done = false
        loop.submit({ usleep(20_000) }, done: { done = true })
        loop.run()   // nothing else is alive: returns as soon as the work completed
        #expect(done)
    }
}
