import Foundation
import Yams

/// The settings file of `--config <file>`: a JSON (`.json`) or YAML (`.yaml`, `.yml`) mapping whose keys are the flags'
/// names without `--` (`port`, `convex-url`, `allow-functions`) and whose values are strings, numbers, `true`/`false`,
/// or lists (read as the comma-separated text the flag takes). A flag and an environment variable win over the file,
/// which wins over the default (``GatewaySettings/init(commandLine:environment:declarations:)``).
///
/// Read with Foundation's and Yams' decoders rather than swift-configuration's file providers: those read a file's
/// known keys only, and a mistyped key must stop the gateway, not be ignored.
package struct SettingsFile: Sendable {
    /// The path, as given.
    package let path: String
    /// The file's settings as text, by environment variable name (which identifies a setting).
    package let values: [String: String]

    /// Reads the file at `path`.
    /// - Throws: ``SettingError`` naming the file, and the key when one is unknown or its value is of the wrong type.
    package static func load(path: String, name: String, declarations: [Setting]) throws(SettingError) -> SettingsFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingError("\(name) '\(printable(path))' is not a readable file")
        }
        let kind = (path as NSString).pathExtension.lowercased()
        let entries: [String: FileValue]
        do {
            switch kind {
            case "json": entries = try JSONDecoder().decode([String: FileValue].self, from: data)
            case "yaml", "yml": entries = try YAMLDecoder().decode([String: FileValue].self, from: data)
            default:
                throw SettingError(
                    "\(name) '\(printable(path))' must end in .json, .yaml or .yml, which says how it is written")
            }
        } catch let error as SettingError {
            throw error
        } catch let DecodingError.typeMismatch(_, context) where !context.codingPath.isEmpty {
            throw SettingError(
                "\(printable(path)): the value of '\(printable(context.codingPath[0].stringValue))' must be a string, a "
                    + "number, true or false, or a list of these")
        } catch {
            throw SettingError(
                "\(printable(path)) is not a \(kind == "json" ? "JSON" : "YAML") mapping of settings (\(error))")
        }
        var values: [String: String] = [:]
        for (key, value) in entries {
            guard key != "config", let setting = declarations.first(where: { $0.flag == "--" + key }) else {
                throw SettingError(
                    "\(printable(path)): unknown key '\(printable(key))'; the keys are the names of the options "
                        + "without -- (see convex-gateway --help)")
            }
            values[setting.environment] = value.text
        }
        return SettingsFile(path: path, values: values)
    }

    /// A value of the file, as the text its flag would take.
    private struct FileValue: Decodable {
        let text: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let list = try? container.decode([Scalar].self) {
                text = list.map(\.text).joined(separator: ",")
            } else {
                text = try container.decode(Scalar.self).text
            }
        }
    }

    /// A string, a whole number, a number or `true`/`false`, as text.
    private struct Scalar: Decodable {
        let text: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let string = try? container.decode(String.self) {
                text = string
            } else if let flag = try? container.decode(Bool.self) {
                text = flag ? "true" : "false"
            } else if let whole = try? container.decode(Int64.self) {
                text = String(whole)
            } else if let number = try? container.decode(Double.self) {
                text = String(number)
            } else {
                throw DecodingError.typeMismatch(
                    String.self,
                    .init(codingPath: decoder.codingPath, debugDescription: "not a string, number or true/false"))
            }
        }
    }
}
