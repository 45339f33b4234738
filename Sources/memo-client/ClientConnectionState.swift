import MemoClient

/// MemoClient's `ConnectionState`, under a name that does not clash with MemoTUI's. (`MemoClient.ConnectionState`
/// cannot say it: the module and its main class share the name, so the class wins the lookup.) This file imports
/// MemoClient alone so that the name below is not ambiguous.
typealias ClientConnectionState = ConnectionState
