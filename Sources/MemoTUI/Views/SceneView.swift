import MemoModel
import MemoViewModels

/// Draws whichever scene is on screen and routes keys to it: the glue between the coordinator and the terminal,
/// with no terminal of its own, so that tests can drive it with keys and read the grid.
public enum SceneView {
    /// Draws the scene of `model` into a fresh grid of the given size.
    @FrontEnd
    public static func render(_ model: SceneModel?, status: ConnectionStatus, width: Int, height: Int) -> Grid {
        var grid = Grid(width: width, height: height)
        switch model {
        case .list(let list): ListView.draw(list.current, status: status, strings: list.strings, into: &grid)
        case .detail(let detail):
            DetailView.draw(detail.current, status: status, strings: detail.strings, into: &grid)
        case .compose(let compose):
            ComposeView.draw(
                compose.current, mode: compose.mode, status: status, strings: compose.strings, into: &grid)
        case .notSaved(let notSaved):
            NotSavedView.draw(notSaved.current, status: status, strings: notSaved.strings, into: &grid)
        case .history(let history): HistoryView.draw(history, status: status, into: &grid)
        case .trash(let trash): TrashView.draw(trash, status: status, into: &grid)
        case nil: break
        }
        return grid
    }

    /// Sends a key to the scene on screen; `status` says whether writes are allowed (read-only).
    @FrontEnd
    public static func handle(
        _ key: Key, model: SceneModel?, status: ConnectionStatus = .local, width: Int, height: Int
    ) async -> ScreenCommand {
        switch model {
        case .list(let list): return await ListView.handle(key, model: list, status: status, height: height)
        case .detail(let detail):
            return await DetailView.handle(key, model: detail, status: status, width: width, height: height)
        case .compose(let compose): return await ComposeView.handle(key, model: compose, width: width)
        case .notSaved(let notSaved): return NotSavedView.handle(key, model: notSaved)
        case .history(let history):
            return HistoryView.handle(key, model: history, status: status, width: width, height: height)
        case .trash(let trash): return TrashView.handle(key, model: trash, status: status)
        case nil: return .quit
        }
    }
}
