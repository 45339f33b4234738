import Foundation

/// The built executables sit next to the test bundle.
package func builtExecutable(_ name: String) -> String {
    let runner = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return runner.deletingLastPathComponent().appendingPathComponent(name).path
}

/// Runs a built executable to completion. - Returns: exit status, stdout, stderr.
package func runTool(_ name: String, _ arguments: [String], stdin: String? = nil) throws -> (Int32, String, String) {
    try runTool(name, arguments, environment: nil, stdin: stdin)
}

/// Runs a built executable (or the program at an absolute path) to completion with its own environment (nil:
/// this process's) and working directory.
/// - Returns: exit status, stdout, stderr.
package func runTool(
    _ name: String, _ arguments: [String], environment: [String: String]?, directory: String? = nil,
    stdin: String? = nil
) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: name.hasPrefix("/") ? name : builtExecutable(name))
    process.arguments = arguments
    // The test CAs issue certificates for a day, so memo-client's daily expiry warning would be on the stderr of
    // every test's first command; a test of the warning sets MEMO_EXPIRY_WARNING itself.
    var environment = environment ?? ProcessInfo.processInfo.environment
    if environment["MEMO_EXPIRY_WARNING"] == nil { environment["MEMO_EXPIRY_WARNING"] = "0" }
    process.environment = environment
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let output = Pipe()
    let errors = Pipe()
    let input = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = input
    try process.run()
    // A tool may stop reading before the end (memo-client stops at the content limit): EPIPE is not a failure.
    if let stdin { try? input.fileHandleForWriting.write(contentsOf: Data(stdin.utf8)) }
    try? input.fileHandleForWriting.close()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}

/// The path of a program on PATH, if installed.
package func installedTool(_ name: String) -> String? {
    let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}
