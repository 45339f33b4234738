// The frame codec lives here.
@_exported import MemoCore
