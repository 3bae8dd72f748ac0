import Hummingbird
import NIOCore

/// The request context of the coordinator's HTTP endpoint: Hummingbird's, plus the peer's address (actions that
/// change state are taken from loopback without a token).
struct TributaryRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Whether the request came over loopback.
    var isFromLoopback: Bool {
        guard let address = remoteAddress?.ipAddress else { return false }
        return HTTPEndpoint.isLoopback(host: address)
    }
}
