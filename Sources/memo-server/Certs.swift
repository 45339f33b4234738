import Foundation
import MemoCLI
import MemoPKI
import MemoTLS

/// `memo-server certs init|client|server|revoke|list`.
enum Certs {
    static func initialize(_ arguments: inout Arguments) throws {
        let directory = try arguments.option("--dir") ?? "certs"
        let hosts = try arguments.options("--host")
        let force = arguments.flag("--force")
        try arguments.finish()
        let result = try CertificateAuthority.initialize(directory: directory, hosts: hosts, force: force)
        print("wrote \(result.files.joined(separator: " "))")
        print("server certificate names: \(result.serverNames.joined(separator: ", "))")
    }

    static func client(_ arguments: inout Arguments) throws {
        let directory = try arguments.option("--dir") ?? "certs"
        let readOnly = arguments.flag("--read-only")
        let force = arguments.flag("--force")
        let days = try arguments.integer("--days", in: 1...36_500) ?? 365
        let name = try arguments.required("client NAME")
        try arguments.finish()
        let issued = try CertificateAuthority.issueClient(
            name: name, directory: directory, readOnly: readOnly, force: force, validity: .days(days))
        let info = try CertificateInfo(path: issued.certificatePath)
        print("wrote \(issued.certificatePath) \(issued.keyPath) (common name \(issued.commonName), "
            + "\(issued.role.rawValue), serial \(info.serial), expires \(UTCTime.format(info.notAfter)))")
    }

    static func server(_ arguments: inout Arguments) throws {
        let directory = try arguments.option("--dir") ?? "certs"
        let hosts = try arguments.options("--host")
        let days = try arguments.integer("--days", in: 1...36_500) ?? 825
        try arguments.finish()
        let issued = try CertificateAuthority.issueServer(directory: directory, hosts: hosts, validity: .days(days))
        print("wrote \(issued.certificatePath) \(issued.keyPath) (serial \(issued.serial))")
        print("server certificate names: \(issued.serverNames.joined(separator: ", "))")
        print("client certificates stay valid; a running memo-server loads the new certificate on SIGHUP")
    }

    static func revoke(_ arguments: inout Arguments) throws {
        let directory = try arguments.option("--dir") ?? "certs"
        let target = try arguments.required("revoke NAME|SERIAL")
        try arguments.finish()
        let outcome = try CertificateAuthority.revoke(target, directory: directory)
        for entry in outcome.revoked {
            print("revoked \(entry.name) (\(entry.role), serial \(entry.serial))")
        }
        for entry in outcome.alreadyRevoked {
            let date = entry.revokedAt.map(UTCTime.format) ?? "?"
            print("already revoked: \(entry.name) (\(entry.role), serial \(entry.serial)) since \(date)")
        }
        if let serial = outcome.unknownSerial {
            print("revoked serial \(serial)")
            FileHandle.standardError.write(Data(
                "memo-server: serial \(serial) is not in the index; it is on the revocation list all the same\n".utf8))
        }
        print("\(outcome.listPath) lists \(outcome.listCount) certificate\(outcome.listCount == 1 ? "" : "s"); send SIGHUP to a running memo-server "
            + "to apply it")
    }

    static func list(_ arguments: inout Arguments) throws {
        let directory = try arguments.option("--dir") ?? "certs"
        try arguments.finish()
        let index = try CertificateIndex.load(directory: directory)
        if index.source == .filesInDirectory {
            FileHandle.standardError.write(Data((
                "memo-server: \(directory) has no \(CertificateIndex.fileName) (its CA was made before memo kept "
                + "one): listing the certificates found in \(directory) that its CA signed; certificates whose "
                + "files were moved elsewhere are not shown. The next certs client, server or revoke writes the "
                + "index.\n").utf8))
        }
        let now = UTCTime.now()
        var rows = [["NAME", "ROLE", "SERIAL", "EXPIRES", "SUPERSEDED", "REVOKED"]]
        for (position, entry) in index.entries.enumerated() {
            let expires = UTCTime.format(entry.notAfter) + (entry.notAfter <= now ? " (expired)" : "")
            rows.append([
                entry.name, entry.role, entry.serial, expires, index.supersedingSerial(of: position) ?? "-",
                entry.revokedAt.map(UTCTime.format) ?? "-",
            ])
        }
        var widths = [Int](repeating: 0, count: rows[0].count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        for row in rows {
            let cells = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }
            print(cells.joined(separator: "  "))
        }
    }
}
