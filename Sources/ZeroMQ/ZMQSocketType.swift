import CZeroMQ

/// The socket patterns Tributary uses (`zmq_socket(3)`).
public enum ZMQSocketType: Sendable, CustomStringConvertible {
    case router, dealer, pub, sub, pair, req, rep, xpub, xsub

    var rawValue: Int32 {
        switch self {
        case .router: ZMQ_ROUTER
        case .dealer: ZMQ_DEALER
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .pair: ZMQ_PAIR
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .xpub: ZMQ_XPUB
        case .xsub: ZMQ_XSUB
        }
    }

    public var description: String {
        switch self {
        case .router: "ROUTER"
        case .dealer: "DEALER"
        case .pub: "PUB"
        case .sub: "SUB"
        case .pair: "PAIR"
        case .req: "REQ"
        case .rep: "REP"
        case .xpub: "XPUB"
        case .xsub: "XSUB"
        }
    }
}
