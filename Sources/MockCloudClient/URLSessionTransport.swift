#if canImport(FoundationNetworking) || (canImport(Darwin) && canImport(Security))
import Foundation
import MockCloudJSON
#if canImport(FoundationNetworking)
import CCurl
import FoundationNetworking
#else
import Security
#endif

/// The URLSession transport: the app's on Apple platforms (HTTP/2, gzip
/// decoded by the system), and on Linux over FoundationNetworking.
///
/// It trusts the CA file's certificate (`TrustAnchor.der`) and nothing
/// else; how differs, because the two URLSessions differ:
/// - Apple platforms: the box's CA is the only anchor of the server-trust
///   challenge (`SecTrustSetAnchorCertificatesOnly`), with the SSL policy for
///   the host name; a certificate that fails is refused.
/// - Linux: FoundationNetworking has no trust callback and no per-session
///   anchor; libcurl under it reads the system's trust store. So `init`
///   refuses unless every file of that store (libcurl's CA file and CA
///   directory, `LinuxTrustStore`) holds the box's CA and nothing else: run
///   it where `/etc/ssl/certs` is the box's CA alone (a container, or a
///   mount namespace as `Tests/client/run.py` does). libcurl then verifies
///   the certificate and the host name against that CA.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    private let baseURL: String
    private let session: URLSession
    #if canImport(FoundationNetworking)
    private let configuration: URLSessionConfiguration
    #endif

    /// `baseURL` like `https://192.168.1.20:8443`; a request taking longer
    /// than `requestTimeout` in all is a connection failure (as
    /// `CurlTransport`'s: keep it above `ClientConfiguration.wait`). Throws
    /// `TransportError.setup` for a URL that is not https (and on Linux, for
    /// a trust store that holds more than `trust`'s certificate).
    public init(baseURL: URL, trust: TrustAnchor, requestTimeout: Duration = .seconds(120)) throws {
        let baseURL = try TransportBase.text(of: baseURL)
        #if canImport(FoundationNetworking)
        try LinuxTrustStore.check(onlyAnchor: trust.der)
        let delegate: (any URLSessionDelegate)? = nil
        #else
        guard let certificate = SecCertificateCreateWithData(nil, Data(trust.der) as CFData) else {
            throw TransportError.setup("the CA file's certificate is not one Security can read")
        }
        let delegate: (any URLSessionDelegate)? = TrustChallenge(anchor: certificate)
        #endif
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        // The whole exchange (the resource timeout), and so at most as long
        // between two packets of it (the request timeout).
        let timeout = max(0.001, Double(requestTimeout.components.seconds) + Double(requestTimeout.components.attoseconds) / 1e18)
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        self.baseURL = baseURL
        #if canImport(FoundationNetworking)
        self.configuration = configuration
        #endif
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    /// The session for `request`. On Linux a request with a body gets a
    /// session, so a connection, of its own: when a reused connection turns
    /// out dead, FoundationNetworking's libcurl sends the request again on a
    /// fresh one but fails to rewind its body (the second sending carries
    /// none, or loses 64 KiB of it), and nginx answers 400 to the short body,
    /// which the client would take for the box's refusal. On a fresh
    /// connection a failure is reported instead, and the client's retry
    /// sends the whole body again. Apple's URLSession rewinds; it keeps one
    /// session.
    private func session(for request: TransportRequest) -> (session: URLSession, own: Bool) {
        #if canImport(FoundationNetworking)
        if !request.body.isEmpty {
            return (URLSession(configuration: configuration, delegate: nil, delegateQueue: nil), true)
        }
        #endif
        return (session, false)
    }

    deinit { session.invalidateAndCancel() }

    /// The data task of one `send`, cancelled from the task's cancellation
    /// handler, which may run before the data task exists.
    private final class Running: @unchecked Sendable {
        private let lock = NSLock()
        private var task: URLSessionDataTask?
        private var cancelled = false

        func start(_ task: URLSessionDataTask) {
            lock.lock()
            self.task = task
            let cancelled = cancelled
            lock.unlock()
            task.resume()
            if cancelled { task.cancel() }
        }

        func cancel() {
            lock.lock()
            cancelled = true
            let task = task
            lock.unlock()
            task?.cancel()
        }

        var wasCancelled: Bool {
            lock.lock()
            defer { lock.unlock() }
            return cancelled
        }
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard let url = URL(string: baseURL + request.target) else {
            throw TransportError.setup("bad URL \(baseURL + request.target)")
        }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        if !request.body.isEmpty { urlRequest.httpBody = Data(request.body) }
        let running = Running()
        let (session, own) = session(for: request)
        defer { if own { session.finishTasksAndInvalidate() } }
        let result: Result<TransportResponse, any Error> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                running.start(session.dataTask(with: urlRequest) { data, response, error in
                    if let error {
                        return continuation.resume(returning: .failure(Self.error(error, cancelled: running.wasCancelled)))
                    }
                    guard let http = response as? HTTPURLResponse else {
                        return continuation.resume(returning: .failure(TransportError.connection("not an HTTP answer")))
                    }
                    let headers = http.allHeaderFields.compactMap { name, value -> (name: String, value: String)? in
                        guard let name = name as? String, let value = value as? String else { return nil }
                        return (name.lowercased(), value)
                    }
                    continuation.resume(
                        returning: .success(TransportResponse(status: http.statusCode, headers: headers, body: [UInt8](data ?? Data()))))
                })
            }
        } onCancel: {
            running.cancel()
        }
        return try result.get()
    }

    /// URLSession's failure as the client treats it: a cancelled task is
    /// `CancellationError`, a certificate that did not verify `untrusted`
    /// (never retried), everything else (refused, reset, cut, timed out)
    /// `connection`.
    private static func error(_ error: any Error, cancelled: Bool) -> any Error {
        if cancelled { return CancellationError() }
        guard let error = error as? URLError else { return TransportError.connection("\(error)") }
        let text = error.localizedDescription
        switch error.code {
        case .serverCertificateUntrusted, .serverCertificateHasUnknownRoot, .serverCertificateHasBadDate,
            .serverCertificateNotYetValid:
            return TransportError.untrusted(text)
        #if canImport(FoundationNetworking)
        // FoundationNetworking reports libcurl's verification failures as
        // `.unknown` with libcurl's words: these are OpenSSL's verify
        // failure and libcurl's two host name mismatches.
        case .unknown
        where text.hasPrefix("SSL certificate problem") || text.contains("does not match target host name")
            || text.contains("no alternative certificate subject name matches"):
            return TransportError.untrusted(text)
        #else
        case .cancelled:
            return TransportError.untrusted("the certificate did not verify against the CA file")  // the challenge refused it
        #endif
        default:
            return TransportError.connection(text)
        }
    }
}

#if !canImport(FoundationNetworking)
/// The server-trust challenge answered with the CA file's certificate as
/// the only anchor and the SSL policy for the host name; anything else is
/// refused. The session holds it (not the transport: no cycle).
private final class TrustChallenge: NSObject, URLSessionDelegate, @unchecked Sendable {
    let anchor: SecCertificate

    init(anchor: SecCertificate) { self.anchor = anchor }

    func urlSession(
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

#if canImport(FoundationNetworking)
/// The trust store FoundationNetworking's libcurl reads, checked to hold the
/// CA file's certificate alone: libcurl's CA file (`CURLINFO_CAINFO`;
/// without one, each file FoundationNetworking would pick instead) and every
/// file in its CA directory (`CURLINFO_CAPATH`). Each must hold at least one
/// PEM block, and every block must be a `CERTIFICATE` whose bytes are the CA
/// file's: a `TRUSTED CERTIFICATE`, a CRL or any other certificate refuses.
/// Checked when the transport is made.
enum LinuxTrustStore {
    /// What FoundationNetworking sets as the CA file when libcurl has none.
    static let fallbackFiles = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/usr/share/ssl/certs/ca-bundle.crt",
        "/usr/local/share/certs/ca-root-nss.crt", "/etc/ssl/cert.pem",
    ]

    /// Throws `TransportError.setup` naming the first file that holds
    /// anything but `anchor` (DER).
    static func check(onlyAnchor anchor: [UInt8]) throws {
        guard let handle = curl_easy_init() else { throw TransportError.setup("curl_easy_init failed") }
        defer { curl_easy_cleanup(handle) }
        var caFile: UnsafePointer<CChar>? = nil, caPath: UnsafePointer<CChar>? = nil
        guard mockcloud_curl_info_string(handle, CURLINFO_CAINFO, &caFile) == CURLE_OK,
            mockcloud_curl_info_string(handle, CURLINFO_CAPATH, &caPath) == CURLE_OK
        else { throw TransportError.setup("this libcurl does not say which CA file it reads (CURLINFO_CAINFO)") }
        let files = caFile.map { [String(cString: $0)] } ?? fallbackFiles.filter { FileManager.default.fileExists(atPath: $0) }
        guard !files.isEmpty else {
            throw TransportError.setup("libcurl names no CA file: it would trust OpenSSL's defaults")
        }
        var checked = files
        if let caPath {
            let directory = String(cString: caPath)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            checked += names.sorted().map { directory + "/" + $0 }
        }
        for path in checked {
            if let problem = problem(inFile: path, anchor: anchor) {
                throw TransportError.setup(
                    "URLSession on Linux trusts the system's CAs, and \(path) \(problem); run it where /etc/ssl/certs "
                        + "holds the box's CA alone (README, \"The two transports\")")
            }
        }
    }

    /// Why `path` is not the CA alone, or nil.
    static func problem(inFile path: String, anchor: [UInt8]) -> String? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return nil }
        if isDirectory.boolValue { return "is a directory" }
        guard let data = FileManager.default.contents(atPath: path) else { return "cannot be read" }
        let blocks = TrustAnchor.pemBlocks([UInt8](data))
        if blocks.isEmpty { return "holds no certificate" }
        for block in blocks {
            guard block.label == "CERTIFICATE" else { return "holds a \(block.label) block" }
            guard ASCII.decodeBase64(block.base64) == anchor else { return "holds another certificate" }
        }
        return nil
    }
}
#endif
#endif
