// The epoll event loop and non-blocking sockets live here.
