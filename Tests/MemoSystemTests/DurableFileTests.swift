import Foundation
import Glibc
import MemoSystem
import Testing

@Suite("System: files fsynced whole or not at all")
struct DurableFileTests {
    /// A fresh folder, removed afterwards (MemoSystemTests links no fixture target).
    private func withFolder(_ body: (String) throws -> Void) throws {
        var template = Array((NSTemporaryDirectory() + "memo-durable-XXXXXX").utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let folder = String(cString: try #require(created))
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try body(folder)
    }

    private func mode(_ path: String) throws -> mode_t {
        var status = stat()
        try #require(stat(path, &status) == 0)
        return status.st_mode & 0o777
    }

    @Test func replaceLeavesTheNewBytesPrivateAndNoTemporaryFileBeside() throws {
        try withFolder { folder in
            let path = folder + "/queue"
            try DurableFile.replace(path, Array("old".utf8))
            try DurableFile.replace(path, Array("new".utf8))
            #expect(FileManager.default.contents(atPath: path) == Data("new".utf8))
            #expect(try mode(path) == 0o600)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["queue"])
        }
    }

    @Test func createRefusesAFileThatExistsSayingWhichCallAndWhichFile() throws {
        try withFolder { folder in
            let path = folder + "/memo.txt"
            try DurableFile.create(path, Array("first".utf8))
            #expect(throws: DurableFile.Failure("creating \(path): File exists")) {
                try DurableFile.create(path, Array("second".utf8))
            }
            #expect(FileManager.default.contents(atPath: path) == Data("first".utf8))
        }
    }

    @Test func replaceInAFolderThatIsGoneFailsAndLeavesNothing() throws {
        try withFolder { folder in
            let path = folder + "/missing/queue"
            #expect(throws: DurableFile.Failure("creating \(path).tmp-\(getpid()): No such file or directory")) {
                try DurableFile.replace(path, Array("bytes".utf8))
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }
}
