import Convex
import Foundation

/// The kinds of setting: how text becomes a value, what `--help` calls the value, and how the default is documented.
extension Setting {
    typealias Path<Value> = WritableKeyPath<GatewaySettings, Value> & Sendable

    /// A setting whose text `parse` turns into the value at `path`. The documented default is `describe` of the value
    /// `GatewaySettings()` starts with, followed by `note`, unless `documented` says it in words.
    static func value<Value>(
        _ flag: String?, _ environment: String, _ path: Path<Value>, valueName: String, choices: [String] = [],
        secret: Bool = false, alternative: String? = nil, default documented: String? = nil, note: String? = nil,
        describe: (Value) -> String = { "\($0)" }, help: String,
        parse: @escaping @Sendable (_ text: String, _ name: String) throws(SettingError) -> Value
    ) -> Setting {
        var defaultText = documented ?? "`\(describe(GatewaySettings()[keyPath: path]))`"
        if let note { defaultText += " (\(note))" }
        return Setting(
            flag: flag, environment: environment, help: help, defaultText: defaultText, valueName: valueName,
            choices: choices, isSecret: secret, alternative: alternative
        ) { text, name, settings throws(SettingError) in
            guard let text else { return }
            settings[keyPath: path] = try parse(text, name)
        }
    }

    /// Any text.
    static func text(_ flag: String, _ environment: String, _ path: Path<String>, help: String) -> Setting {
        value(flag, environment, path, valueName: "<text>", help: help) { text, _ in text }
    }

    /// Any text; unset means `nil`, whose meaning `documented` describes.
    static func text(
        _ flag: String, _ environment: String, _ path: Path<String?>, valueName: String, default documented: String,
        help: String
    ) -> Setting {
        value(flag, environment, path, valueName: valueName, default: documented, help: help) { text, _ in text }
    }

    /// A whole number in `range`.
    static func integer(
        _ flag: String, _ environment: String, _ path: Path<Int>, in range: ClosedRange<Int>, note: String? = nil,
        help: String
    ) -> Setting {
        value(flag, environment, path, valueName: "<n>", note: note, help: help) { text, name throws(SettingError) in
            guard let number = Int(text), range.contains(number) else {
                throw SettingError(
                    "\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound), not '\(printable(text))'"
                )
            }
            return number
        }
    }

    /// A number in `range`.
    static func number(
        _ flag: String, _ environment: String, _ path: Path<Double>, in range: ClosedRange<Double>, note: String? = nil,
        help: String
    ) -> Setting {
        value(flag, environment, path, valueName: "<number>", note: note, describe: decimalText, help: help) {
            text, name throws(SettingError) in
            guard let number = Double(text), range.contains(number) else {
                throw SettingError(
                    "\(name) must be a number from \(decimalText(range.lowerBound)) to \(decimalText(range.upperBound)), "
                        + "not '\(printable(text))'")
            }
            return number
        }
    }

    /// A number of seconds from a millisecond (or zero, where `allowingZero`) to a day, kept to the millisecond.
    static func seconds(
        _ flag: String, _ environment: String, _ path: Path<Duration>, allowingZero: Bool = false, help: String
    ) -> Setting {
        value(flag, environment, path, valueName: "<seconds>", describe: secondsText, help: help) {
            text, name throws(SettingError) in
            // Kept to the millisecond: a smaller positive number would become no time at all.
            let least = allowingZero ? 0 : 0.001
            guard let number = Double(text), number >= least, number <= 86_400 else {
                throw SettingError(
                    "\(name) must be a number of seconds from \(allowingZero ? "0" : "0.001") to 86400, not "
                        + "'\(printable(text))'")
            }
            return .milliseconds(Int64(number * 1000))
        }
    }

    /// `true` or `false`, in any case.
    static func boolean(_ flag: String, _ environment: String, _ path: Path<Bool>, help: String) -> Setting {
        value(flag, environment, path, valueName: "<true|false>", help: help) { text, name throws(SettingError) in
            switch text.lowercased() {
            case "true": return true
            case "false": return false
            default: throw SettingError("\(name) must be true or false, not '\(printable(text))'")
            }
        }
    }

    /// One of the cases of `Choice`, by raw value.
    static func choice<Choice: RawRepresentable<String> & CaseIterable & Sendable>(
        _ flag: String, _ environment: String, _ path: Path<Choice>, help: String
    ) -> Setting {
        let choices = Choice.allCases.map(\.rawValue)
        return value(
            flag, environment, path, valueName: "<\(choices.joined(separator: "|"))>", choices: choices,
            describe: \.rawValue, help: help
        ) { text, name throws(SettingError) in
            guard let choice = Choice(rawValue: text) else {
                throw SettingError(
                    "\(name) must be one of \(choices.joined(separator: ", ")), not '\(printable(text))'")
            }
            return choice
        }
    }

    /// A comma-separated list; the error `parse` throws says what is wrong with it.
    static func list<Element>(
        _ flag: String, _ environment: String, _ path: Path<[Element]>, valueName: String,
        default documented: String? = nil, describe: @escaping (Element) -> String = { "\($0)" }, help: String,
        parse: @escaping @Sendable (_ text: String) throws -> [Element]
    ) -> Setting {
        value(
            flag, environment, path, valueName: valueName, default: documented,
            describe: { $0.map(describe).joined(separator: ", ") }, help: help
        ) { text, name throws(SettingError) in
            do {
                return try parse(text)
            } catch {
                throw SettingError("\(name): \(error)")
            }
        }
    }

    /// A readable file; unset, `fallback` when there is one and it is readable (relative to the working directory),
    /// and what happens otherwise (`fallbackNote`) when the documentation should say it.
    static func file(
        _ flag: String, _ environment: String, _ path: Path<String?>, fallback: String? = nil,
        fallbackNote: String? = nil, help: String
    ) -> Setting {
        Setting(
            flag: flag, environment: environment, help: help,
            defaultText: fallback.map { "`\($0)` if present" + (fallbackNote.map { ", \($0)" } ?? "") } ?? "none",
            valueName: "<path>"
        ) { text, name, settings throws(SettingError) in
            guard let text else {
                if let fallback, FileManager.default.isReadableFile(atPath: fallback) {
                    settings[keyPath: path] = fallback
                }
                return
            }
            guard FileManager.default.isReadableFile(atPath: text) else {
                throw SettingError("\(name) '\(printable(text))' is not a readable file")
            }
            settings[keyPath: path] = text
        }
    }

    /// A credential given directly. Error messages never repeat it.
    static func secret(
        _ flag: String?, _ environment: String, _ path: Path<Secret?>, alternative: String, default documented: String,
        help: String
    ) -> Setting {
        value(
            flag, environment, path, valueName: "<key>", secret: true, alternative: alternative, default: documented,
            help: help
        ) { text, name throws(SettingError) in
            do {
                return try Secret(text, source: name)
            } catch {
                throw SettingError("\(error)")
            }
        }
    }

    /// The path of a file holding a credential; the file is read at once.
    static func secretFile(
        _ flag: String, _ environment: String, _ path: Path<Secret?>, alternative: String, default documented: String,
        help: String
    ) -> Setting {
        value(
            flag, environment, path, valueName: "<path>", alternative: alternative, default: documented, help: help
        ) { text, name throws(SettingError) in
            do {
                return try Secret.load(value: nil, valueName: name, file: text, fileName: name)
            } catch {
                throw SettingError("\(error)")
            }
        }
    }
}

/// `15` for 15.0, `0.5` for 0.5.
private func decimalText(_ number: Double) -> String {
    number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
}

/// A duration in seconds, as `decimalText` writes them.
private func secondsText(_ duration: Duration) -> String {
    decimalText(duration.seconds)
}
