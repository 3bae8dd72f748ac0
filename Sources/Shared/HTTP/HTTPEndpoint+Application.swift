import Hummingbird
import Logging

extension HTTPEndpoint {
    /// A Hummingbird application serving `router` on this endpoint; once its port is bound it logs `serving` with
    /// the URL and hands the URL to `listening` (the port chosen when this endpoint's is 0).
    func application(
        router: Router<TributaryRequestContext>, serving: Logger.Message, logger: Logger,
        listening: @escaping @Sendable (String) -> Void
    ) -> some ApplicationProtocol {
        let endpoint = self
        return Application(
            router: router,
            configuration: .init(address: .hostname(endpoint.host, port: endpoint.port), serverName: "tributary"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? endpoint.port
                let host = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
                let url = "http://\(host):\(port)/"
                logger.info(serving, metadata: ["url": "\(url)"])
                listening(url)
            },
            logger: logger)
    }
}
