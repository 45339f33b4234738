import MemoNet

/// A connection's running timers, one per slot of `ServerConnectionMachine.Deadline`: the handshake, closing and
/// linger deadlines follow one another in one slot, so starting one replaces the one before; the frame deadline
/// has its own.
struct ConnectionTimers {
    private var phase: TimerHandle?
    private var frame: TimerHandle?

    /// Whether a timer runs in `kind`'s slot.
    func isRunning(_ kind: ServerConnectionMachine.Deadline) -> Bool {
        (kind == .frame ? frame : phase) != nil
    }

    /// Puts `timer` in `kind`'s slot, cancelling the one it replaces.
    mutating func replace(_ kind: ServerConnectionMachine.Deadline, with timer: TimerHandle?) {
        var timer = timer
        if kind == .frame { swap(&frame, &timer) } else { swap(&phase, &timer) }
        timer?.cancel()
    }

    /// Cancels the timer in `kind`'s slot.
    mutating func cancel(_ kind: ServerConnectionMachine.Deadline) {
        replace(kind, with: nil)
    }

    mutating func cancelAll() {
        cancel(.handshake)
        cancel(.frame)
    }
}
