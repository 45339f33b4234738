import Foundation
import MemoModel
import MemoStore
import MemoTUI
import MemoText
import MemoViewModels
import Testing

/// Compares a grid's text dump with `Tests/TUISnapshots/<name>.txt`; `MEMO_RECORD_SNAPSHOTS=1` writes the files
/// instead. The folder sits beside the test target, not in it: SwiftPM warns about files in a target that are
/// neither sources nor declared resources, and the package manifest is not this target's to change.
func expectSnapshot(_ grid: Grid, named name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    for row in 0..<grid.height {
        #expect(grid.text(ofRow: row).columns == grid.width, "row \(row) of \(name)", sourceLocation: sourceLocation)
    }
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("TUISnapshots")
    let file = folder.appendingPathComponent(name + ".txt")
    let dump = grid.textDump
    if ProcessInfo.processInfo.environment["MEMO_RECORD_SNAPSHOTS"] == "1" {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(dump.utf8).write(to: file)
        return
    }
    guard let stored = try? String(contentsOf: file, encoding: .utf8) else {
        Issue.record("no snapshot \(name).txt; run with MEMO_RECORD_SNAPSHOTS=1", sourceLocation: sourceLocation)
        return
    }
    #expect(dump == stored, "snapshot \(name) differs:\n\(dump)", sourceLocation: sourceLocation)
}

@Suite("TUI screen snapshots: every scene with Hangul at 40x10 and 80x24")
@FrontEnd
struct TUISnapshotTests {
    static let sizes = [(40, 10), (80, 24)]
    static let remote = ConnectionStatus(server: "memo.example.org:7443", state: .reconnecting(attempt: 2),
        pendingIDs: [TUIFixtures.id(1), TUIFixtures.id(2), TUIFixtures.id(3)])

    private func started() async -> (MemoryStore, SceneCoordinator) {
        let store = TUIFixtures.store(TUIFixtures.korean)
        let coordinator = SceneCoordinator(storage: store, dateFormat: TUIFixtures.utcKorean)
        coordinator.start()
        await FrontEnd.drained()
        return (store, coordinator)
    }

    private func press(_ keys: [Key], _ coordinator: SceneCoordinator, width: Int, height: Int) async {
        for key in keys {
            _ = await SceneView.handle(key, model: coordinator.currentModel, width: width, height: height)
            await settle(coordinator)
        }
    }

    @Test func theList() async throws {
        for (width, height) in Self.sizes {
            let (_, coordinator) = await started()
            await press([.character("j")], coordinator, width: width, height: height)
            let grid = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(grid, named: "list-\(width)x\(height)")
            coordinator.stop()
        }
    }

    @Test func theListFilteredWhileTyping() async throws {
        for (width, height) in Self.sizes {
            let (_, coordinator) = await started()
            await press([.character("/"), .character("메"), .character("모")], coordinator, width: width, height: height)
            let grid = SceneView.render(coordinator.currentModel, status: Self.remote, width: width, height: height)
            try expectSnapshot(grid, named: "list-filter-\(width)x\(height)")
            coordinator.stop()
        }
    }

    @Test func theListAskingToDeleteAndItsHelp() async throws {
        for (width, height) in Self.sizes {
            let (_, coordinator) = await started()
            await press([.character("d")], coordinator, width: width, height: height)
            let asking = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(asking, named: "list-delete-\(width)x\(height)")
            await press([.escape, .character("?")], coordinator, width: width, height: height)
            let help = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(help, named: "list-help-\(width)x\(height)")
            coordinator.stop()
        }
    }

    @Test func theDetail() async throws {
        for (width, height) in Self.sizes {
            let (_, coordinator) = await started()
            await press([.character("j"), .enter], coordinator, width: width, height: height)
            #expect(coordinator.currentScene == .detail(TUIFixtures.id(2)))
            let grid = SceneView.render(coordinator.currentModel, status: Self.remote, width: width, height: height)
            try expectSnapshot(grid, named: "detail-\(width)x\(height)")
            coordinator.stop()
        }
    }

    @Test func theEditorWithItsCursorAfterHangul() async throws {
        for (width, height) in Self.sizes {
            let (_, coordinator) = await started()
            await press([.character("j"), .enter, .character("e")], coordinator, width: width, height: height)
            await press([.up, .end, .character("!"), .enter, .character("새"), .character("줄")], coordinator,
                width: width, height: height)
            let grid = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(grid, named: "compose-edit-\(width)x\(height)")
            coordinator.stop()
        }
    }

    @Test func theEditorOfferingTheConflictChoice() async throws {
        for (width, height) in Self.sizes {
            let (store, coordinator) = await started()
            await press([.enter, .character("e"), .character("?")], coordinator, width: width, height: height)
            _ = try await store.update(id: TUIFixtures.id(3), content: "다른 사람의 수정", expectedRevision: nil)
            await FrontEnd.drained()
            await press([.control("s")], coordinator, width: width, height: height)
            let grid = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(grid, named: "compose-conflict-\(width)x\(height)")
            coordinator.stop()
        }
    }
}
