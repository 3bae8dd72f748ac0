import Foundation
import ZeroMQ

/// The CURVE keys of a peer of the coordinator (worker, client, subscriber): its own key pair, read from its
/// `.secret` file, and the coordinator's public key, read from the coordinator's `.pub` (or `.secret`) file.
/// Sockets made with them encrypt everything and talk only to that coordinator, which admits the peer if its
/// public key is in the allow-list.
public struct CurveClientKeys: Sendable {
    public let publicKey: String
    let secretKey: String
    /// The coordinator's public key.
    public let serverKey: String

    /// Environment variables naming the files when no flag does.
    public static let secretVariable = "TRIBUTARY_CURVE_SECRET"
    public static let serverKeyVariable = "TRIBUTARY_SERVER_KEY"

    /// Reads the two files.
    /// - Throws: ``KeyFileError`` naming the file that cannot be read or holds no valid key.
    public init(secretFile: String, serverKeyFile: String) throws {
        let secret = try CurveKeyFile.fields(of: secretFile)
        guard let secretKey = secret["secret-key"], let publicKey = try? CurveKeyPair.publicKey(ofSecret: secretKey)
        else {
            throw KeyFileError("\(secretFile) holds no valid secret-key (make one with `tributary keys generate`)")
        }
        guard let serverKey = try CurveKeyFile.fields(of: serverKeyFile)["public-key"], serverKey.utf8.count == 40
        else {
            throw KeyFileError("\(serverKeyFile) holds no valid public-key of the coordinator")
        }
        self.publicKey = publicKey
        self.secretKey = secretKey
        self.serverKey = serverKey
    }

    /// The keys named by flags, else by the environment; nil when neither names any.
    /// - Throws: ``KeyFileError`` when only one of the two files is named, or a file is not valid.
    public static func resolve(secretFile: String?, serverKeyFile: String?) throws -> CurveClientKeys? {
        let environment = ProcessInfo.processInfo.environment
        let secret = secretFile ?? environment[secretVariable]
        let server = serverKeyFile ?? environment[serverKeyVariable]
        switch (secret, server) {
        case (nil, nil): return nil
        case (let secret?, let server?): return try CurveClientKeys(secretFile: secret, serverKeyFile: server)
        case (nil, _): throw KeyFileError("--server-key needs --curve-secret (or \(secretVariable)) too")
        case (_, nil): throw KeyFileError("--curve-secret needs --server-key (or \(serverKeyVariable)) too")
        }
    }

    /// Makes `socket` a CURVE client with these keys; call before it connects.
    package func apply(to socket: ZMQSocket) throws {
        try socket.setCurveClient(publicKey: publicKey, secretKey: secretKey, serverKey: serverKey)
    }
}

/// The coordinator's CURVE setup: its key pair and the allow-list folder.
public struct CoordinatorCurve: Sendable {
    /// The coordinator's `.secret` file (also handed to its local pool workers as their key and server key).
    public let secretFile: String
    package let publicKey: String
    package let secretKey: String
    /// The folder of `.pub` files of the peers it admits.
    public let allowDirectory: String

    /// Reads the coordinator's key file.
    /// - Throws: ``KeyFileError`` naming the file.
    public init(secretFile: String, allowDirectory: String) throws {
        guard let secretKey = try CurveKeyFile.fields(of: secretFile)["secret-key"],
            let publicKey = try? CurveKeyPair.publicKey(ofSecret: secretKey)
        else {
            throw KeyFileError("\(secretFile) holds no valid secret-key (make one with `tributary keys generate`)")
        }
        self.secretFile = secretFile
        self.publicKey = publicKey
        self.secretKey = secretKey
        self.allowDirectory = allowDirectory
    }
}
