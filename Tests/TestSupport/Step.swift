/// Runs `body`, naming `step` in any error it throws: a test of several reads says which one failed.
public func step<T>(_ name: String, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch {
        throw TestFailure("\(name): \(error)")
    }
}
