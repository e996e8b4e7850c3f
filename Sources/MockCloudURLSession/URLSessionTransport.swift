#if canImport(Darwin) && canImport(Security)
import Foundation
import Security

/// The Apple-platform transport: URLSession (HTTP/2, gzip decoded by the
/// system), trusting the box's CA alone in the server-trust challenge: the
/// CA as the only anchor, the SSL policy for the host name. Nothing here is
/// compiled on Linux; it has not been compiled on Apple platforms either
/// (this project builds on Debian only).
public final class URLSessionTransport: NSObject, HTTPTransport, URLSessionDelegate, @unchecked Sendable {
    private let baseURL: String
    private let anchor: SecCertificate
    private var session: URLSession!

    public init(baseURL: String, trust: TrustAnchor) throws(TransportError) {
        guard baseURL.hasPrefix("https://") else { throw .setup("the URL must start with https://") }
        guard let der = TrustAnchor.firstCertificate(inPEM: trust.pem),
            let certificate = SecCertificateCreateWithData(nil, Data(der) as CFData)
        else { throw .setup("the CA file holds no certificate") }
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        anchor = certificate
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        configuration.timeoutIntervalForRequest = 120
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        guard let url = URL(string: baseURL + request.target) else { throw .setup("bad URL \(baseURL + request.target)") }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        if !request.body.isEmpty { urlRequest.httpBody = Data(request.body) }
        let data: Data, response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch let error as URLError where error.code == .cancelled || error.code == .serverCertificateUntrusted {
            throw .untrusted("\(error.localizedDescription)")  // the challenge below is the only canceller
        } catch {
            throw .connection("\(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else { throw .connection("not an HTTP answer") }
        let headers = http.allHeaderFields.compactMap { name, value -> (name: String, value: String)? in
            guard let name = name as? String, let value = value as? String else { return nil }
            return (name.lowercased(), value)
        }
        return HTTPResponse(status: http.statusCode, headers: headers, body: [UInt8](data))
    }

    public func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
            let trust = challenge.protectionSpace.serverTrust
        else { return (.performDefaultHandling, nil) }
        SecTrustSetPolicies(trust, SecPolicyCreateSSL(true, challenge.protectionSpace.host as CFString))
        SecTrustSetAnchorCertificates(trust, [anchor] as CFArray)
        SecTrustSetAnchorCertificatesOnly(trust, true)
        guard SecTrustEvaluateWithError(trust, nil) else { return (.cancelAuthenticationChallenge, nil) }
        return (.useCredential, URLCredential(trust: trust))
    }
}
#endif
