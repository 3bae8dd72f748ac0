import CZeroMQ
import Foundation
import Glibc

/// A CURVE key pair (CurveZMQ: Curve25519 keys, authenticated encryption), both keys in Z85 text: 40 characters
/// for 32 bytes.
public struct CurveKeyPair: Sendable {
    /// The public key, to hand to peers.
    public let publicKey: String
    /// The secret key: keep it in a file only its owner can read, and never log it.
    public let secretKey: String

    /// Whether this libzmq was built with CURVE (libsodium).
    public static var isSupported: Bool { zmq_has("curve") != 0 }

    /// A new random key pair (`zmq_curve_keypair(3)`).
    /// - Throws: ``ZMQError`` when libzmq has no CURVE support (`ENOTSUP`).
    public static func generate() throws -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        _ = try ZMQError.check("zmq_curve_keypair") { zmq_curve_keypair(&publicKey, &secretKey) }
        defer { for index in secretKey.indices { secretKey[index] = 0 } }
        return CurveKeyPair(
            publicKey: String(decoding: publicKey.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self),
            secretKey: String(decoding: secretKey.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The public key of a secret key (`zmq_curve_public(3)`).
    /// - Throws: ``ZMQError`` when `secretKey` is not 40 characters of Z85.
    public static func publicKey(ofSecret secretKey: String) throws -> String {
        guard secretKey.utf8.count == 40 else {
            throw ZMQError(operation: "zmq_curve_public", code: EINVAL, detail: "a secret key is 40 Z85 characters")
        }
        var publicKey = [CChar](repeating: 0, count: 41)
        _ = try ZMQError.check("zmq_curve_public") { zmq_curve_public(&publicKey, secretKey) }
        return String(decoding: publicKey.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension CurveKeyPair {
    /// A 32-byte key in Z85 text (`zmq_z85_encode(3)`), as ZAP hands CURVE keys over in binary; nil for another
    /// length.
    public static func z85(_ key: Data) -> String? {
        guard key.count == 32 else { return nil }
        var text = [CChar](repeating: 0, count: 41)
        let encoded = key.withUnsafeBytes { bytes in
            zmq_z85_encode(&text, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), 32)
        }
        guard encoded != nil else { return nil }
        return String(decoding: text.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
