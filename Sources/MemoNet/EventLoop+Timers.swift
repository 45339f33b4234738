extension EventLoop {
    /// Runs `work` on the loop's thread once `delay` has passed (CLOCK_MONOTONIC), unless cancelled first.
    ///
    /// Callable from any thread; the deadline is taken at the call. Timers with equal deadlines fire in the
    /// order they were scheduled. Precision is a millisecond (the `epoll_wait` timeout); a timer never fires
    /// early. Each timer costs one heap entry, O(log n) to schedule and fire and O(1) to cancel, so one per
    /// connection is fine.
    /// - Returns: A handle whose `cancel()` stops the timer.
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> TimerHandle {
        let handle = TimerHandle(cancellations)
        if isEmbedded {
            // The embedded clock is read on the loop's thread: from another thread, when the work gets there.
            if inEventLoop {
                local.value.timers.insert(deadline: embeddedDeadline(after: delay), handle: handle, work: work)
            } else {
                execute {
                    self.local.value.timers.insert(
                        deadline: self.embeddedDeadline(after: delay), handle: handle, work: work)
                }
            }
            return handle
        }
        let deadline = Monotonic.deadline(after: delay)
        if inEventLoop {
            local.value.timers.insert(deadline: deadline, handle: handle, work: work)
        } else {
            execute {
                self.local.value.timers.insert(deadline: deadline, handle: handle, work: work)
            }
        }
        return handle
    }

    /// How many timers are waiting, cancelled ones not yet dropped included. Call on the loop's thread.
    public var pendingTimerCount: Int {
        preconditionInEventLoop()
        return local.value.timers.count
    }
}
