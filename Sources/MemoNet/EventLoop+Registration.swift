internal import CMemoLinux

extension EventLoop {
    /// Watches `fileDescriptor` for `interest`, calling `handler` on this loop's thread. Call on the loop's
    /// thread.
    ///
    /// The loop keeps a strong reference to `handler` until `deregister` (or shutdown). The caller still owns
    /// the descriptor: deregister it before closing it.
    /// - Throws: `NetError` from `epoll_ctl` (EEXIST when the descriptor is already registered).
    public func register(
        fileDescriptor: Int32,
        interest: Interest,
        handler: any EventHandler
    ) throws(NetError) -> Registration {
        preconditionInEventLoop()
        let state = local.value
        let id = state.nextRegistrationID
        if !isEmbedded { try control(EPOLL_CTL_ADD, fd: fileDescriptor, mask: interest.epollMask, id: id) }
        state.nextRegistrationID += 1
        state.registrations[id] = LoopState.Entry(fd: fileDescriptor, handler: handler, interest: interest)
        return Registration(id: id, fileDescriptor: fileDescriptor)
    }

    /// `register(fileDescriptor:interest:handler:)` for a socket; an embedded socket (`TCPSocket.embedded`) can
    /// only be registered with an embedded loop, which reads its readiness off its peer.
    public func register(socket: TCPSocket, interest: Interest, handler: any EventHandler) throws(NetError)
        -> Registration
    {
        let registration = try register(fileDescriptor: socket.fileDescriptor, interest: interest, handler: handler)
        if let peer = socket.embedded {
            precondition(isEmbedded, "an embedded socket registered with a real event loop")
            local.value.registrations[registration.id]?.peer = peer
        }
        return registration
    }

    /// Changes what `registration` is watched for; does nothing when unchanged or no longer registered. Call on
    /// the loop's thread.
    /// - Throws: `NetError` from `epoll_ctl`.
    public func setInterest(_ interest: Interest, for registration: Registration) throws(NetError) {
        preconditionInEventLoop()
        let state = local.value
        guard let entry = state.registrations[registration.id], entry.interest != interest else { return }
        if !isEmbedded { try control(EPOLL_CTL_MOD, fd: entry.fd, mask: interest.epollMask, id: registration.id) }
        state.registrations[registration.id]?.interest = interest
    }

    /// The interest currently registered, or nil when not registered. Call on the loop's thread.
    public func interest(of registration: Registration) -> Interest? {
        preconditionInEventLoop()
        return local.value.registrations[registration.id]?.interest
    }

    /// Stops watching and releases the handler; idempotent. Call on the loop's thread, before closing the
    /// descriptor.
    public func deregister(_ registration: Registration) {
        preconditionInEventLoop()
        guard local.value.registrations.removeValue(forKey: registration.id) != nil else { return }
        // Fails only when the descriptor was closed first, which already removed it from the epoll set.
        if !isEmbedded { _ = try? control(EPOLL_CTL_DEL, fd: registration.fileDescriptor, mask: 0, id: 0) }
    }
    /// How many descriptors are registered. Call on the loop's thread.
    public var registrationCount: Int {
        preconditionInEventLoop()
        return local.value.registrations.count
    }
}
