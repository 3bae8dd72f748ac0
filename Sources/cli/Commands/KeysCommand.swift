import ArgumentParser
import Foundation
import TributaryCommandSupport
import TributaryMessaging

/// `tributary keys`: CURVE key pairs for peers of a coordinator.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Make CURVE key pairs.", subcommands: [KeysGenerateCommand.self])
}

/// `tributary keys generate`: writes NAME.pub and NAME.secret.
struct KeysGenerateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write a new CURVE key pair: NAME.pub (public key and role) and NAME.secret (mode 0600).",
        discussion:
            "Prints the two paths and the public key; the secret key is never printed. Existing files are not overwritten."
    )

    @Option(help: ArgumentHelp("The folder to write the key files into (created if missing).", valueName: "dir"))
    var out: String

    @Option(help: "The key's name: the files are NAME.pub and NAME.secret.")
    var name: String = "tributary"

    @Option(help: "The role written into NAME.pub: worker, client or subscriber.")
    var role: String = "worker"

    func validate() throws {
        guard CurveKeyFile.Role(rawValue: role) != nil else {
            throw ValidationError("--role must be worker, client or subscriber, not '\(role)'")
        }
    }

    func run() async throws {
        do {
            let written = try CurveKeyFile.generate(in: out, name: name, role: CurveKeyFile.Role(rawValue: role)!)
            Terminal.line("public key: \(written.publicKey)")
            Terminal.line("wrote \(written.publicPath) (role \(role)) and \(written.secretPath) (mode 0600)")
        } catch let error as KeyFileError {
            Terminal.error(error.description)
            throw ExitCode(1)
        }
    }
}
