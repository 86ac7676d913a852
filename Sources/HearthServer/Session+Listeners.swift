import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol
import HearthStorage

/// A session as the sink of its listeners: encodes pushed lines, coalesces while the subscriber is over its
/// output budget (bounded memory whatever the write rate), closes a subscriber that does not drain in time,
/// and sends heartbeats when idle.
extension Session: ListenerSink {
    var canAcceptEvents: Bool { !closed && conn.pendingOutputBytes <= server.config.subscriberBudget }

    func deliver(_ event: ListenerEvent, for listener: Listener, shareKey: UInt64?) {
        guard !closed else { return }
        if heldEvents != nil { heldEvents!.append(event); return }
        if case .error = event {
            subscriptions[listener.tag] = nil
            forgetGuard(listener.tag)
        }
        server.dispatcher.sendEvent(event, for: listener, shareKey: shareKey, on: conn)
        pushed()
    }

    /// A shared change set whose encoding the dispatcher holds goes out as the listener's prefix and those
    /// bytes; any other as an event.
    func deliverChanges(seq: UInt64, size: Int, changes: [ViewChange], for listener: Listener, shareKey: UInt64?) {
        if let shareKey, deliverShared(shareKey, for: listener) { return }
        deliver(.query(seq: seq, initial: false, reset: false, size: size, changes: changes), for: listener, shareKey: shareKey)
    }

    /// Runs once per delivery of a change set shared by many listeners: the dispatcher is used without a
    /// reference taken to it.
    func deliverShared(_ shareKey: UInt64, for listener: Listener) -> Bool {
        guard !closed, heldEvents == nil else { return false }
        guard Unmanaged.passUnretained(server.dispatcher)._withUnsafeGuaranteedRef({
            $0.sendShared(shareKey, for: listener, on: self.conn)
        }) else { return false }
        pushed()
        return true
    }

    /// A line was pushed: no heartbeat is due this tick, and past its budget the subscriber's drain deadline
    /// starts.
    private func pushed() {
        sentSinceTick = true
        if !canAcceptEvents { startSlowDeadline() }
    }

    /// Registers a listener; its first snapshot goes out right after the `listen` response. False (nothing
    /// registered or sent) when its first snapshot was torn by a batch landing: run it again after the
    /// publication.
    /// `guarding`: what the rules allowed it on and what that depends on (`Session+Access`).
    func subscribe(_ target: Listener.Target, resumeAfter: UInt64?, history: UInt64?, id: [UInt8]?, ctx: Context,
                   guarding: (ListenTarget, [DocumentPath])) throws(HearthError) -> Bool {
        let tag = String(nextSubscription)
        heldEvents = []
        let added: Listener?
        do {
            added = try server.listenerHub.add(target, tag: tag, sink: self, resumeAfter: resumeAfter, history: history,
                                                    confirm: { ctx.confirmSnapshot() })
        } catch {
            heldEvents = nil
            throw error
        }
        guard let listener = added else {
            heldEvents = nil
            return false
        }
        nextSubscription += 1
        subscriptions[tag] = listener
        guardListener(tag, target: guarding.0, dependsOn: guarding.1)
        let held = heldEvents ?? []
        heldEvents = nil
        let historyToken = HistoryToken.encode(server.engine.historyID)
        server.dispatcher.replyOK(id, session: self) { w in
            w.key("sub"); w.string(tag)
            w.key("history"); w.string(historyToken)
        }
        for e in held { deliver(e, for: listener) }
        return true
    }

    /// Registers a listener whose first snapshot a reader thread reads (`ListenerHub.begin`), so that the loop
    /// never waits for a store read: the listen's response keeps its place and the connection's next lines
    /// wait, as for any read on a reader thread; once the snapshot's seq is published the listener is
    /// registered at the published seq, the response goes out, then its first snapshot.
    /// `guarding`: what the rules allowed it on and what that depends on (`Session+Access`); the rules judge it
    /// again while its snapshot is read, as any listener, and a refusal then answers the listen.
    func subscribeOffLoop(_ target: Listener.Target, resumeAfter: UInt64?, history: UInt64?, id: [UInt8]?, ctx: Context,
                          guarding: (ListenTarget, [DocumentPath])) throws(HearthError) {
        let tag = String(nextSubscription)
        let (listener, read) = try server.listenerHub.begin(target, tag: tag, sink: self, resumeAfter: resumeAfter, history: history)
        nextSubscription += 1
        subscriptions[tag] = listener
        guardListener(tag, target: guarding.0, dependsOn: guarding.1)
        let slot = beginOffLoopRead()
        // A first listen on a query: the reader encodes its initial snapshot too (a large one then costs the
        // loop a copy).
        var encodeAs: String?
        if case .query = target, resumeAfter == nil { encodeAs = tag }
        readFirstSnapshot(listener, read, encodeAs: encodeAs, slot: slot, id: id, timing: ctx.deferTiming())
    }

    private func readFirstSnapshot(_ listener: Listener, _ read: FirstSnapshotRead, encodeAs: String?, slot: ResponseQueue.Slot,
                                   id: [UInt8]?, timing: RequestTiming) {
        // Answered once the snapshot's seq is published; dropped if the connection closed meanwhile.
        server.readForListeners(read, encodeInitialAs: encodeAs) { [self] result, line in
            offLoopReadReturned(seq: 0) { [unowned self] in
                switch result {
                case .failure(let error): self.refuseListen(listener, error, slot: slot, id: id, timing: timing)
                case .success(let first):
                    self.completeListen(listener, first, line: line, encodeAs: encodeAs, slot: slot, id: id, timing: timing)
                }
            }
        }
    }

    /// A listener the engine moved to a new seq without the commits between (`Engine.reset(to:)`): its whole
    /// result is read on a reader thread, then it is registered again and sent it as a reset. No line of the
    /// connection waits for it; the listener's later events follow its reset, and no heartbeat goes out on
    /// the connection until every such listener has had its reset (a heartbeat says everything up to its seq
    /// was sent).
    func readAfterReset(_ listener: Listener, _ read: FirstSnapshotRead) {
        awaitingReset.insert(listener.tag)
        server.readForListeners(read) { [self] result, _ in finishReset(listener, result) }
    }

    private func finishReset(_ listener: Listener, _ result: Result<FirstSnapshot, HearthError>) {
        let tag = listener.tag
        guard !closed, subscriptions[tag] === listener, listener.isPending else {
            // Ended meanwhile (unlisten, the rules: `revoke` sent its error line).
            if subscriptions[tag] == nil { awaitingReset.remove(tag) }
            return
        }
        if listener.held {
            // Being judged again: completed once judged (the backlog brings the result forward meanwhile).
            completionsAfterJudging[tag] = { [self] in finishReset(listener, result) }
            return
        }
        let outcome: ListenerHub.Completion
        switch result {
        case .failure(let error): outcome = .failed(error)
        case .success(let first): outcome = server.listenerHub.complete(listener, with: first)
        }
        switch outcome {
        case .registered:
            awaitingReset.remove(tag)
            sentSinceTick = true
        case .again(let next):
            readAfterReset(listener, next)
        case .failed(let error):
            subscriptions[tag] = nil
            server.listenerHub.remove(listener)
            forgetGuard(tag)
            awaitingReset.remove(tag)
            sendResetEnd(tag, error)
        }
    }

    /// The error line that ends a listener whose listen was answered before (its reset is being read).
    func sendResetEnd(_ tag: String, _ error: HearthError) {
        server.dispatcher.sendEvent(.error(error), sub: tag, shareKey: nil, on: conn)
        sentSinceTick = true
    }

    /// The pending `listener`'s first snapshot is published: registers it, answers the listen, then sends the
    /// snapshot; or reads it again; or answers the listen with the refusal that ended it meanwhile.
    private func completeListen(_ listener: Listener, _ first: FirstSnapshot, line: InitialSnapshotLine?, encodeAs: String?,
                                slot: ResponseQueue.Slot, id: [UInt8]?, timing: RequestTiming) {
        let tag = listener.tag
        guard subscriptions[tag] === listener, listener.isPending else {
            let refusal = refusedWhilePending.removeValue(forKey: tag)
                ?? HearthError(.aborted, "the listener ended while its first snapshot was read; listen again")
            return refuseListen(listener, refusal, slot: slot, id: id, timing: timing)
        }
        if listener.held {
            // Judged again meanwhile, and the rules' reads are being read: completed once it is judged.
            completionsAfterJudging[tag] = { [self] in
                completeListen(listener, first, line: line, encodeAs: encodeAs, slot: slot, id: id, timing: timing)
            }
            return
        }
        heldEvents = []
        let completion = server.listenerHub.complete(listener, with: first, sinkSendsInitial: line != nil)
        let held = heldEvents ?? []
        heldEvents = nil
        switch completion {
        case .again(let read):
            readFirstSnapshot(listener, read, encodeAs: encodeAs, slot: slot, id: id, timing: timing)
        case .failed(let error):
            refuseListen(listener, error, slot: slot, id: id, timing: timing)
        case .registered(let delivered):
            let historyToken = HistoryToken.encode(server.engine.historyID)
            let ok = server.dispatcher.okLine(id) { w in
                w.key("sub"); w.string(tag)
                w.key("history"); w.string(historyToken)
            }
            server.requestFinished(timing, failed: false, id: id, session: self)
            answerOffLoopRead(slot, line: ok) { [self] in
                assert(!responses.hasOutstanding, "a listen's first snapshot would overtake the responses before it")
                if !delivered, let line {
                    server.firstSnapshotsSentAsRead += 1
                    line.send(at: listener.seq, on: conn)
                    pushed()
                }
                for e in held { deliver(e, for: listener) }
            }
        }
    }

    /// Answers a listen whose listener did not register with `error`, and forgets it.
    private func refuseListen(_ listener: Listener, _ error: HearthError, slot: ResponseQueue.Slot, id: [UInt8]?,
                              timing: RequestTiming) {
        let tag = listener.tag
        if subscriptions[tag] === listener { subscriptions[tag] = nil }
        refusedWhilePending[tag] = nil
        server.listenerHub.remove(listener)
        forgetGuard(tag)
        server.requestFinished(timing, failed: true, id: id, session: self)
        answerOffLoopRead(slot, line: server.dispatcher.errorLine(error.prefixed("listen"), id: id))
    }

    func unsubscribe(_ tag: String) -> Bool {
        guard let l = subscriptions.removeValue(forKey: tag) else { return false }
        awaitingReset.remove(tag)
        server.listenerHub.remove(l)
        forgetGuard(tag)
        return true
    }

    func endSubscriptions() {
        for l in subscriptions.values { server.listenerHub.remove(l) }
        for tag in Array(listenTargets.keys) { forgetGuard(tag) }
        subscriptions.removeAll()
        completionsAfterJudging.removeAll()
        awaitingReset.removeAll()
        expiryTimer?.cancel()
        expiryTimer = nil
        server.listenerHub.forget(self)
        heartbeatTimer?.cancel()
        heartbeatTimer = nil
        slowDeadline?.cancel()
        slowDeadline = nil
    }

    /// Output fell to zero: send each coalesced listener its net changes.
    func drainedListeners() {
        let hub = server.listenerHub
        guard hub.hasListenersBehind || slowDeadline != nil else { return }   // every drain: the common case
        hub.drained(self)
        if slowDeadline != nil, hub.isCaughtUp(self) {
            slowDeadline?.cancel()
            slowDeadline = nil
        }
    }

    func coalescing() { startSlowDeadline() }

    private func startSlowDeadline() {
        guard slowDeadline == nil, !closingSlow else { return }
        // Unowned (not weak, which would give the session a side table): the timer is cancelled when the
        // connection closes (`endSubscriptions`), before the session can go away.
        slowDeadline = server.loop.timer(after: server.config.slowSubscriberTimeoutMs) { [unowned self] in
            guard !self.closed else { return }
            self.slowDeadline = nil
            if self.conn.pendingOutputBytes <= self.server.config.subscriberBudget
                && self.server.listenerHub.isCaughtUp(self) { return }
            let e = HearthError(.resourceExhausted,
                                "subscriber did not drain its output within \(self.server.config.slowSubscriberTimeoutMs) ms; closing")
            self.server.logger.warn("closing slow subscriber \(self.conn.peer): \(counted(self.conn.pendingOutputBytes, "byte")) unsent")
            self.closingSlow = true
            self.endSubscriptions()
            // The lines not yet on their way go, so the error line follows only what is (whole lines): a
            // subscriber that reads again within the timeout gets it, then the end of the stream, never a
            // cut line; one that still does not read is cut off after it.
            self.conn.dropUnsentOutput()
            self.conn.send(self.server.dispatcher.eventLine(.error(e), sub: nil))
            self.close(deadlineMs: max(self.server.config.slowSubscriberTimeoutMs, self.server.loop.closeDeadlineMs))
        }
    }

    /// Heartbeats every `ms` while the connection is otherwise idle (0 turns them off).
    func setHeartbeat(_ ms: UInt64) {
        heartbeatMs = ms
        heartbeatTimer?.cancel()
        heartbeatTimer = nil
        guard ms > 0 else { return }
        heartbeatTimer = server.loop.timer(after: ms, repeat: ms) { [unowned self] in self.heartbeatTick() }   // cancelled at close
    }

    private func heartbeatTick() {
        guard !closed else { return }
        defer { sentSinceTick = false }
        guard !sentSinceTick, !responses.hasOutstanding, awaitingReset.isEmpty, server.listenerHub.isCaughtUp(self) else { return }
        var w = JSONWriter(capacity: 64)
        w.beginObject()
        w.key("type"); w.string("heartbeat")
        w.key("seq"); w.uint(server.engine.lastDurableSeq)
        w.endObject()
        w.newline()
        w.withBytes { conn.send($0) }
    }
}
