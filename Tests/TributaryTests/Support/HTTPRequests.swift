import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Plain HTTP requests to a coordinator's HTTP endpoint, for tests.
enum HTTPRequests {
    /// Sends `method` to `url` and returns the status and body.
    static func send(
        _ url: String, method: String = "GET", token: String? = nil, headers: [String: String] = [:]
    ) async throws
        -> (status: Int, body: String)
    {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        return (status, String(decoding: data, as: UTF8.self))
    }
}
