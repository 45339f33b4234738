// The client library: connection, remote store with its mirror cache.
