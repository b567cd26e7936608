import ArgumentParser

/// Where a setting comes from: its flag when given, else its environment variable when set and not empty (flag >
/// environment > default; the default is whatever the caller leaves in place on `nil`).
struct SettingSource {
    let environment: [String: String]

    func value(_ flag: String?, _ name: String) -> String? {
        if let flag { return flag }
        if let env = environment[name], !env.isEmpty { return env }
        return nil
    }

    /// A whole number in `range`.
    /// - Throws: `ValidationError` naming the setting and the range.
    func int(_ flag: Int?, _ name: String, range: ClosedRange<Int>) throws -> Int? {
        guard let text = value(flag.map(String.init), name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw ValidationError(
                "\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound), not '\(text)'")
        }
        return number
    }
}
