import Foundation
import MemoCLI
import MemoTLS

/// `memo-server certs init` and `memo-server certs client`.
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
        let name = try arguments.required("client NAME")
        try arguments.finish()
        let issued = try CertificateAuthority.issueClient(
            name: name, directory: directory, readOnly: readOnly, force: force)
        print("wrote \(issued.certificatePath) \(issued.keyPath) (common name \(issued.commonName), "
            + "\(issued.role.rawValue))")
    }
}
