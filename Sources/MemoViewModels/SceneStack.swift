import Foundation
import MemoModel
/// A screen of the app, as a value.
public enum Scene: Sendable, Hashable {
    case list
    case detail(UUID)
    case compose(ComposeMode)
    /// The writes the server refused at replay (`!` on the list).
    case notSaved
    /// A memo's kept versions (`h` on the detail).
    case history(UUID)
    /// The deleted memos (`T` on the list).
    case trash
}

/// How a scene comes on screen (as the root, pushed or modal) or goes away (popped or dismissed).
public enum Transition: Sendable, Hashable {
    /// Replaces everything with this scene.
    case root(Scene)
    /// Pushes onto the navigation of the scene on screen.
    case push(Scene)
    /// Presents over everything, until dismissed.
    case modal(Scene)
    /// Goes back from a pushed scene.
    case pop
    /// Closes the topmost modal scene and whatever was pushed on it.
    case dismiss
}

/// Why a transition could not be applied.
public enum NavigationError: Error, Sendable, Hashable {
    case emptyStack
    /// `pop` on a root or on a modal scene (a modal is dismissed, not popped).
    case nothingToPop
    case noModalToDismiss
}

/// The scenes from the root up to the one on screen. It records the scenes themselves, not the containers they
/// sit in, so the scene shown is always the last entry, modal or not.
public struct SceneStack: Sendable, Hashable {
    public enum Presentation: Sendable, Hashable {
        case root, push, modal
    }

    public struct Entry: Sendable, Hashable {
        public var scene: Scene
        public var presentation: Presentation
    }

    public private(set) var entries: [Entry]

    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    public init(root: Scene) {
        entries = [Entry(scene: root, presentation: .root)]
    }

    /// The scene on screen.
    public var top: Scene? { entries.last?.scene }

    public var scenes: [Scene] { entries.map(\.scene) }

    /// True when a modal scene is on screen or below the top.
    public var hasModal: Bool { entries.contains { $0.presentation == .modal } }

    /// The one function that navigates: the stack after `transition`.
    public static func apply(_ transition: Transition, to stack: SceneStack) throws(NavigationError) -> SceneStack {
        var entries = stack.entries
        switch transition {
        case .root(let scene):
            entries = [Entry(scene: scene, presentation: .root)]
        case .push(let scene):
            guard !entries.isEmpty else { throw .emptyStack }
            entries.append(Entry(scene: scene, presentation: .push))
        case .modal(let scene):
            guard !entries.isEmpty else { throw .emptyStack }
            entries.append(Entry(scene: scene, presentation: .modal))
        case .pop:
            guard let last = entries.last else { throw .emptyStack }
            guard last.presentation == .push else { throw .nothingToPop }
            entries.removeLast()
        case .dismiss:
            guard let modal = entries.lastIndex(where: { $0.presentation == .modal }) else {
                throw .noModalToDismiss
            }
            entries.removeSubrange(modal...)
        }
        return SceneStack(entries: entries)
    }

    /// `apply` in place.
    public mutating func apply(_ transition: Transition) throws(NavigationError) {
        self = try Self.apply(transition, to: self)
    }
}
