import Foundation
import MemoClient
import MemoClientCLI
import MemoModel
import MemoTUI

/// Opens the terminal front end over a `RemoteStore` and returns the exit code.
///
/// The mirror cache is loaded first, so that a server that is down still leaves the last list on screen (marked
/// offline); the connection is made in the background and the screen follows it. The cache is written back on the
/// way out, by `q` or Ctrl-C, by SIGINT/SIGTERM/SIGHUP (which end the front end's loop; the exit status is then
/// 128 + the signal), or after an error. The caller has blocked the front end's signals (`TerminalApp.blockSignals`).
/// - Parameter locale: a locale identifier for the detail's dates (`ko_KR`); nil for the user's locale.
func runFrontEnd(configuration: ClientConfiguration, locale: String?) async -> Int32 {
    let client: MemoConnection
    do {
        client = try MemoConnection.start(configuration)
    } catch {
        report(error)
        return ExitCode(error).rawValue
    }
    defer { client.close() }
    let cachePath = MirrorCache.defaultPath(server: configuration.server)
    // The queue is bound to the server and the certificate that write it: another certificate has its own file.
    let identity: ClientIdentity
    do {
        identity = try ClientIdentity(configuration)
    } catch {
        report(error)
        return ExitCode(error).rawValue
    }
    let queuePath = WriteQueueFile.path(besideCache: cachePath, fingerprint: identity.fingerprint)
    let store: RemoteStore
    do {
        store = try RemoteStore(
            client: client, cachePath: cachePath, queuePath: queuePath, identity: identity, holdQueue: true)
    } catch {
        // Which file is damaged decides: the cache is only a copy of the server's list, so a damaged one is dropped,
        // not a reason to stop; the queue and the not-saved list hold the user's writes, so a damaged one is moved
        // aside (and said where), never deleted.
        do {
            _ = try MirrorCache.load(from: cachePath)
        } catch {
            FileHandle.standardError.write(Data("memo-client: ignoring the mirror cache: \(error)\n".utf8))
            if unlink(cachePath) != 0 {
                let reason = String(cString: strerror(errno))
                FileHandle.standardError.write(Data("memo-client: cannot remove \(cachePath): \(reason)\n".utf8))
            }
        }
        if (try? WriteQueueFile.load(from: queuePath)) == nil {
            moveAside(queuePath, what: "the offline write queue")
        }
        let notSavedPath = NotSavedFile.path(besideQueue: queuePath)
        if (try? NotSavedFile.load(from: notSavedPath)) == nil {
            moveAside(notSavedPath, what: "the not-saved list")
        }
        do {
            store = try RemoteStore(
                client: client, cachePath: cachePath, queuePath: queuePath, identity: identity, holdQueue: true)
        } catch {
            report(error)
            return ExitCode(error).rawValue
        }
    }
    store.startMirror()
    let status = RemoteStatus(store: store)

    var options = TerminalOptions.fromEnvironment()
    if let locale { options.setLocale(Locale(identifier: locale)) }
    // A save says it has had no answer after 3 s, or after --timeout when that is shorter; the write goes on.
    options.saveTimeout = min(options.saveTimeout, configuration.requestTimeout)
    // The queue is sent once the screen listens for refusals, so that none is reported to no one.
    options.onReady = { store.releaseQueue() }
    let ending: TerminalApp.Ending
    do {
        ending = try await TerminalApp.run(
            storage: store, status: status, options: options, versions: RemoteVersions(client: client))
    } catch {
        saveCache(store)
        keepUnwrittenWrites(store)
        report(error)
        return ExitCode.failure.rawValue
    }
    // Every way out saves here, a terminating signal included: it ended the front end's loop like `q` does (the
    // terminal is already restored), and the status says which signal, as a shell expects.
    saveCache(store)
    keepUnwrittenWrites(store)
    switch ending {
    case .quit: return ExitCode.ok.rawValue
    case .signal(let signal): return 128 + signal
    }
}

/// Waits for the queue's files to be written; when they cannot be (a full disk), prints every write still queued
/// on standard error, so that the text typed is not lost with the process (the exit code stays that of the front
/// end). - Returns: false in that case.
@discardableResult
private func keepUnwrittenWrites(_ store: RemoteStore) -> Bool {
    guard let problem = store.flushQueueFiles() else { return true }
    var text = "memo-client: \(problem); the writes not sent to the server follow\n"
    for write in store.queuedWriteList {
        text += "--- \(write.kind) \(write.memo.id.lowercasedString)\n\(write.memo.content)\n"
    }
    FileHandle.standardError.write(Data(text.utf8))
    return false
}

private func saveCache(_ store: RemoteStore) {
    do {
        try store.saveCache()
    } catch {
        FileHandle.standardError.write(Data("memo-client: could not save the mirror cache: \(error)\n".utf8))
    }
}

private func report(_ error: any Error) {
    FileHandle.standardError.write(Data("memo-client: \(ExitCode.message(for: error))\n".utf8))
}

/// Moves a damaged file of the user's writes to PATH.damaged (replacing an older one) and says where; a move that
/// fails is said too, in the system's words, and the file stays where it is (the next start finds it again): it is
/// never deleted.
private func moveAside(_ path: String, what: String) {
    let aside = path + ".damaged"
    if rename(path, aside) == 0 {
        FileHandle.standardError.write(Data("memo-client: \(what) was moved to \(aside)\n".utf8))
    } else {
        let reason = String(cString: strerror(errno))
        FileHandle.standardError.write(Data(
            "memo-client: \(what) at \(path) is damaged and could not be moved aside (\(reason)); it stays there\n".utf8))
    }
}
