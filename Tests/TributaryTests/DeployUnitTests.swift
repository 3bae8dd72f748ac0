import Foundation
import Testing

/// The systemd units in deploy/ against the executables they start: every option a unit passes is one the
/// executable takes (a renamed flag would otherwise fail only on a production host).
@Suite("Deploy: the systemd units name options the executables take")
struct DeployUnitTests {
    @Test(
        "each --option of a unit's ExecStart is in its executable's --help",
        arguments: [
            ("tributary-coordinator.service", "tributary-coordinator"),
            ("tributary-worker@.service", "tributary-worker"),
            ("tributary-coordinator.service.d/cluster.conf", "tributary-coordinator"),
        ])
    func optionsExist(unit: String, executable: String) async throws {
        let text = try String(
            contentsOf: Repository.root.appendingPathComponent("deploy/\(unit)"), encoding: .utf8)
        // ExecStart= and its continuation lines.
        var command = ""
        var inside = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            // An empty ExecStart= (a drop-in resetting the unit's) starts nothing.
            if line.hasPrefix("ExecStart="), line != "ExecStart=" { inside = true }
            guard inside else { continue }
            command += line + " "
            if !line.hasSuffix("\\") { break }
        }
        let options = Set(command.split(separator: " ").filter { $0.hasPrefix("--") }.map(String.init))
        #expect(!options.isEmpty, "no options found in \(unit)'s ExecStart")
        let help = try await Binaries.run(executable, ["--help"])
        for option in options {
            #expect(help.output.contains(option + " "), "\(unit) passes \(option), which \(executable) does not take")
        }
    }
}
