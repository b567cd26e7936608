import ConvexSyncProtocol
import ConvexValues
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Calls of a deployment's admin HTTP API, authorized by its admin key (`Authorization: Convex <key>`): what a
/// deployment tells its operators and no ordinary client. The key is never part of a description or an error.
public struct ConvexAdminClient: Sendable, CustomStringConvertible {
    public let deploymentURL: String
    private let adminKey: String

    public init(deploymentURL: String, adminKey: String) {
        var url = deploymentURL
        while url.hasSuffix("/") { url.removeLast() }
        self.deploymentURL = url
        self.adminKey = adminKey
    }

    public var description: String { "ConvexAdminClient(\(deploymentURL), admin key <redacted>)" }

    /// The deployment's function spec: `POST /api/function_spec`, as `npx convex function-spec` asks for it.
    /// - Throws: when the deployment cannot be reached in `timeout`, refuses the key, or answers something that is not
    ///   a function spec.
    public func functionSpec(timeout: Duration = .seconds(5)) async throws(FunctionSpecError) -> FunctionSpec {
        guard let url = URL(string: deploymentURL + "/api/function_spec"), url.scheme == "http" || url.scheme == "https"
        else {
            throw FunctionSpecError(message: "The deployment URL is not an http(s) URL")
        }
        let (seconds, attoseconds) = timeout.components
        var request = URLRequest(url: url, timeoutInterval: Double(seconds) + Double(attoseconds) / 1e18)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Convex \(adminKey)", forHTTPHeaderField: "Authorization")
        request.httpBody = Data("{}".utf8)
        let outcome: Result<(Data, Int), FunctionSpecError> = await withCheckedContinuation { continuation in
            let session = URLSession(configuration: .ephemeral)
            let task = session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(
                        returning: .failure(FunctionSpecError(message: "fetch failed: \(error.localizedDescription)")))
                } else {
                    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                    continuation.resume(returning: .success((data ?? Data(), status)))
                }
            }
            task.resume()
            session.finishTasksAndInvalidate()
        }
        let (data, status) = try outcome.get()
        guard status == 200 else {
            throw FunctionSpecError(message: "the deployment answered \(status) to the function spec request")
        }
        let value: ConvexValue
        do {
            value = try ConvexValue(convexJSON: Array(data))
        } catch {
            throw FunctionSpecError(message: "the function spec is not valid JSON: \(error.message)")
        }
        return try FunctionSpec(specJSON: value)
    }
}
