#if canImport(CCurl)
import CCurl
import Dispatch
import Foundation
import MockCloudWire
import Synchronization

/// The Linux transport: libcurl (Debian's OpenSSL flavour), given the box's
/// CA as its only trust anchor (`CURLOPT_CAINFO_BLOB`, the system's CA path
/// switched off). FoundationNetworking's URLSession is libcurl too but takes
/// no CA of its own: `URLSessionTransport` explains what it trusts on Linux.
///
/// A few handles, each used by one request at a time and kept for the next:
/// an easy handle inside its own multi handle, whose connection (HTTP/2
/// where the server offers it) stays open between requests; requests sent
/// together go over separate connections. Answers are asked for gzip and
/// decoded by libcurl. A transfer waits in `curl_multi_poll`, which a
/// cancelled task wakes (`curl_multi_wakeup`): the transfer is dropped there
/// and then (libcurl closes its connection, or resets its HTTP/2 stream).
public final class CurlTransport: HTTPTransport, @unchecked Sendable {
    private let baseURL: String
    private let trust: TrustAnchor
    private let pool = DispatchQueue(label: "mockcloud.curl.pool")
    /// Idle handles; touched only on `pool`.
    private var idle: [Handle] = []
    private let requestTimeoutSeconds: Int

    private static let globalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    /// An easy handle and the multi handle that runs it and keeps its
    /// connection; one request uses it at a time (curl_multi_wakeup alone
    /// may be called from another thread).
    private struct Handle: @unchecked Sendable {
        let easy: UnsafeMutableRawPointer
        let multi: UnsafeMutableRawPointer

        static func make() -> Handle? {
            guard let easy = curl_easy_init() else { return nil }
            guard let multi = curl_multi_init() else {
                curl_easy_cleanup(easy)
                return nil
            }
            return Handle(easy: easy, multi: multi)
        }
    }

    /// Set by the task's cancellation handler, read by the transfer loop.
    private final class Cancellation: Sendable {
        private struct State {
            var requested = false
            /// The multi handle whose poll to wake, while the transfer runs.
            var handle: Handle?
        }
        private let state = Mutex(State())

        func cancel() {
            state.withLock {
                $0.requested = true
                if let handle = $0.handle { _ = curl_multi_wakeup(handle.multi) }
            }
        }

        /// Whether cancelled; records (or clears, with nil) the handle to wake.
        func running(on handle: Handle?) -> Bool {
            state.withLock {
                $0.handle = handle
                return $0.requested
            }
        }

        var isRequested: Bool { state.withLock { $0.requested } }
    }

    /// `baseURL` like `https://192.168.1.20:8443`; a request taking longer
    /// than `requestTimeout` in all (whole seconds, at least 1) is a
    /// connection failure. Keep it above `ClientConfiguration.wait`, which
    /// the box may hold a follow's request for.
    public init(baseURL: URL, trust: TrustAnchor, requestTimeout: Duration = .seconds(120)) throws {
        let baseURL = try TransportBase.text(of: baseURL)
        guard Self.globalInit == CURLE_OK else { throw TransportError.setup("curl_global_init failed") }
        self.baseURL = baseURL
        self.trust = trust
        self.requestTimeoutSeconds = max(1, Int(requestTimeout.components.seconds))
    }

    deinit {
        for handle in idle {
            curl_multi_cleanup(handle.multi)
            curl_easy_cleanup(handle.easy)
        }
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let cancellation = Cancellation()
        let result: Result<TransportResponse, any Error> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // A thread of its own: a transfer blocks it for as long as
                // the request lasts (a wait, 30 s), and Dispatch's global
                // queue, as wide as the cores, starts another worker only
                // after a delay once they are all blocked: a request sent
                // beside waits would sit behind them.
                Thread {
                    guard let handle = self.pool.sync(execute: { self.idle.popLast() }) ?? Handle.make() else {
                        return continuation.resume(returning: .failure(TransportError.setup("curl_easy_init failed")))
                    }
                    let result = self.perform(request, on: handle, cancellation)
                    self.pool.sync { self.idle.append(handle) }
                    continuation.resume(returning: result)
                }.start()
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }

    /// Collects one answer's header lines and body (libcurl's callbacks).
    private final class Collector {
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
    }

    private func perform(_ request: TransportRequest, on pair: Handle, _ cancellation: Cancellation) -> Result<TransportResponse, any Error> {
        let handle = pair.easy
        curl_easy_reset(handle)
        let collector = Collector()
        var headerList: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(headerList) }
        for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
            headerList = curl_slist_append(headerList, line)
        }
        // libcurl's own words for a failure (which check, which name), kept
        // until the transfer ends.
        var detail = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let outcome: CURLcode = trust.pem.withUnsafeBytes { pem in
            let failed = configure(handle, for: request, headers: headerList, trusting: pem, into: collector)
            guard failed == CURLE_OK else { return failed }
            return detail.withUnsafeMutableBufferPointer { buffer in
                guard mockcloud_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, buffer.baseAddress) == CURLE_OK else {
                    return CURLE_FAILED_INIT
                }
                defer { _ = mockcloud_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, nil) }
                return run(pair, cancellation)
            }
        }
        if outcome == CURLE_ABORTED_BY_CALLBACK, cancellation.isRequested { return .failure(CancellationError()) }
        guard outcome == CURLE_OK else {
            let words = String(decoding: detail.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(Self.error(outcome, words.isEmpty ? String(cString: curl_easy_strerror(outcome)) : words))
        }
        var status = 0
        guard mockcloud_curl_response_code(handle, &status) == CURLE_OK, status > 0 else {
            return .failure(TransportError.connection("no HTTP status"))
        }
        return .success(TransportResponse(status: status, headers: collector.headers, body: collector.body))
    }

    /// Sets the options of one transfer on `handle`: where, what it trusts,
    /// the request, and `collector` for the answer. The first failure, or
    /// `CURLE_OK`. libcurl copies what it keeps (the URL, the method, the
    /// CA, the body); `headers` and `collector` must outlive the transfer.
    private func configure(
        _ handle: UnsafeMutableRawPointer, for request: TransportRequest, headers: UnsafeMutablePointer<curl_slist>?,
        trusting pem: UnsafeRawBufferPointer, into collector: Collector
    ) -> CURLcode {
        var failed = CURLE_OK
        func set(_ code: CURLcode) { if failed == CURLE_OK { failed = code } }
        (baseURL + request.target).withCString { set(mockcloud_curl_set_pointer(handle, CURLOPT_URL, $0)) }
        // Trust: the box's CA alone. No CA directory (Debian's default
        // would add the system's CAs), peer and host name verified.
        var blob = curl_blob(data: UnsafeMutableRawPointer(mutating: pem.baseAddress), len: pem.count, flags: UInt32(CURL_BLOB_COPY))
        withUnsafePointer(to: &blob) { set(mockcloud_curl_set_pointer(handle, CURLOPT_CAINFO_BLOB, $0)) }
        set(mockcloud_curl_set_pointer(handle, CURLOPT_CAPATH, nil))
        set(mockcloud_curl_set_pointer(handle, CURLOPT_CAINFO, nil))
        set(mockcloud_curl_set_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        set(mockcloud_curl_set_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        // No proxy from the environment: the box is on the LAN.
        "".withCString { set(mockcloud_curl_set_pointer(handle, CURLOPT_PROXY, $0)) }
        set(mockcloud_curl_set_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
        "gzip".withCString { set(mockcloud_curl_set_pointer(handle, CURLOPT_ACCEPT_ENCODING, $0)) }
        set(mockcloud_curl_set_long(handle, CURLOPT_NOSIGNAL, 1))
        set(mockcloud_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT, 10))
        set(mockcloud_curl_set_long(handle, CURLOPT_TIMEOUT, requestTimeoutSeconds))
        set(mockcloud_curl_set_pointer(handle, CURLOPT_HTTPHEADER, UnsafeRawPointer(headers)))
        let method = request.method
        method.withCString { set(mockcloud_curl_set_pointer(handle, CURLOPT_CUSTOMREQUEST, $0)) }
        if !request.body.isEmpty || method == "POST" || method == "PUT" || method == "PATCH" {
            set(mockcloud_curl_set_long(handle, CURLOPT_POST, 1))
            set(mockcloud_curl_set_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
            request.body.withUnsafeBytes {
                set(mockcloud_curl_set_pointer(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)))
            }
        }
        set(Self.collect(on: handle, into: collector))
        return failed
    }

    /// Hands the answer's body and header lines to `collector` (libcurl's
    /// callbacks, `collector` passed unretained: it outlives the transfer).
    private static func collect(on handle: UnsafeMutableRawPointer, into collector: Collector) -> CURLcode {
        let box = Unmanaged.passUnretained(collector).toOpaque()
        var failed = mockcloud_curl_set_write(handle, CURLOPT_WRITEFUNCTION, { data, size, count, box in
            guard let data, let box else { return 0 }
            let collector = Unmanaged<Collector>.fromOpaque(box).takeUnretainedValue()
            data.withMemoryRebound(to: UInt8.self, capacity: size * count) {
                collector.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size * count))
            }
            return size * count
        })
        if failed == CURLE_OK { failed = mockcloud_curl_set_pointer(handle, CURLOPT_WRITEDATA, box) }
        if failed == CURLE_OK {
            failed = mockcloud_curl_set_write(handle, CURLOPT_HEADERFUNCTION, { data, size, count, box in
                guard let data, let box else { return 0 }
                let collector = Unmanaged<Collector>.fromOpaque(box).takeUnretainedValue()
                let line = data.withMemoryRebound(to: UInt8.self, capacity: size * count) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: size * count), as: UTF8.self)
                }
                if line.hasPrefix("HTTP/") {
                    collector.headers = []  // a new answer (after a 100 Continue, or a redirect)
                } else if let colon = line.firstIndex(of: ":") {
                    let name = line[..<colon].lowercased()
                    let value = line[line.index(after: colon)...].trimmingHeaderSpace()
                    collector.headers.append((name, value))
                }
                return size * count
            })
        }
        if failed == CURLE_OK { failed = mockcloud_curl_set_pointer(handle, CURLOPT_HEADERDATA, box) }
        return failed
    }

    /// Runs the easy handle's transfer on its multi handle until it ends or
    /// the task is cancelled (then `CURLE_ABORTED_BY_CALLBACK`, the handle
    /// taken off mid-transfer).
    private func run(_ handle: Handle, _ cancellation: Cancellation) -> CURLcode {
        guard curl_multi_add_handle(handle.multi, handle.easy) == CURLM_OK else { return CURLE_FAILED_INIT }
        defer { curl_multi_remove_handle(handle.multi, handle.easy) }
        defer { _ = cancellation.running(on: nil) }
        while !cancellation.running(on: handle) {
            var running: Int32 = 0
            guard curl_multi_perform(handle.multi, &running) == CURLM_OK else { return CURLE_FAILED_INIT }
            if running == 0 {
                var result = CURLE_OK
                return mockcloud_curl_multi_result(handle.multi, handle.easy, &result) == 1 ? result : CURLE_FAILED_INIT
            }
            guard curl_multi_poll(handle.multi, nil, 0, 1000, nil) == CURLM_OK else { return CURLE_FAILED_INIT }
        }
        return CURLE_ABORTED_BY_CALLBACK
    }

    /// libcurl's failure as the client treats it: verification failures are
    /// `untrusted` (never retried); a CA libcurl cannot load is `setup`;
    /// everything else (refused, reset, cut mid-answer, timed out) is
    /// `connection`.
    private static func error(_ code: CURLcode, _ text: String) -> any Error {
        switch code {
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return TransportError.untrusted(text)
        case CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT,
            CURLE_NOT_BUILT_IN:
            return TransportError.setup(text)
        default:
            return TransportError.connection(text)
        }
    }
}
#endif
