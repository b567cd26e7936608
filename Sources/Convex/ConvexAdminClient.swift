import ConvexSyncProtocol
import ConvexValues
import Foundation
import HTTPFetch

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
        let response: HTTPFetchResponse
        do {
            response = try await httpFetch(
                .POST, deploymentURL + "/api/function_spec",
                headers: [("Content-Type", "application/json"), ("Authorization", "Convex \(adminKey)")],
                body: Array("{}".utf8), timeout: timeout)
        } catch {
            throw FunctionSpecError(message: "fetch failed: \(error)")
        }
        guard response.status == 200 else {
            throw FunctionSpecError(message: "the deployment answered \(response.status) to the function spec request")
        }
        let value: ConvexValue
        do {
            value = try ConvexValue(convexJSON: response.body)
        } catch {
            throw FunctionSpecError(message: "the function spec is not valid JSON: \(error.message)")
        }
        return try FunctionSpec(specJSON: value)
    }
}
