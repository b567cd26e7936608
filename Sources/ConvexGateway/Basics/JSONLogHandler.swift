import Logging

/// How `convex-gateway` writes its log (`--log-format`).
public enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's own lines: `<time> <level> <label>: <key>=<value> … [<source>] <message>`.
    case text
    /// One JSON object per line (``JSONLogHandler``).
    case json
}

/// A swift-log handler that writes each event as one JSON object on one line, for log collectors:
///
/// ```json
/// {"time":"2026-12-07T18:30:00.123Z","level":"info","message":"Request answered","label":"convex-gateway","source":"ConvexGateway","http.status":"200"}
/// ```
///
/// `time` (UTC, ISO 8601 with milliseconds), `level`, `message`, `label` and `source` come first, then the metadata,
/// flattened and sorted by key: a nested dictionary's keys are joined with `.`, a list becomes a JSON array of
/// strings, and every value is a string. A metadata key that would take one of the five names gets `metadata.` in
/// front. Control characters, quotes and backslashes are escaped, so a line never breaks.
package struct JSONLogHandler: LogHandler {
    private let label: String
    /// Writes one whole line (its `\n` included).
    private let write: @Sendable (String) -> Void
    /// Milliseconds since 1970 now: the gateway's wall clock.
    private let now: @Sendable () -> Int64
    package var logLevel = Logger.Level.info
    package var metadata: Logger.Metadata = [:]

    package static let reservedKeys: Set<String> = ["time", "level", "message", "label", "source"]

    package init(label: String, now: @escaping @Sendable () -> Int64, write: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.now = now
        self.write = write
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        write(
            Self.line(
                milliseconds: now(), level: event.level, message: "\(event.message)", label: label,
                source: event.source, metadata: merged))
    }

    /// One event as its line, `\n` included.
    package static func line(
        milliseconds: Int64, level: Logger.Level, message: String, label: String, source: String,
        metadata: Logger.Metadata
    ) -> String {
        var flat: [(String, Logger.MetadataValue)] = []
        flatten(metadata, prefix: "", into: &flat)
        var out = "{\"time\":\"\(timestamp(milliseconds))\",\"level\":\"\(level.rawValue)\",\"message\":"
        appendString(message, to: &out)
        out += ",\"label\":"
        appendString(label, to: &out)
        out += ",\"source\":"
        appendString(source, to: &out)
        for (key, value) in flat.sorted(by: { $0.0 < $1.0 }) {
            out += ","
            appendString(reservedKeys.contains(key) ? "metadata." + key : key, to: &out)
            out += ":"
            if case .array(let items) = value {
                out += "["
                for (index, item) in items.enumerated() {
                    if index > 0 { out += "," }
                    appendString("\(item)", to: &out)
                }
                out += "]"
            } else {
                appendString("\(value)", to: &out)
            }
        }
        out += "}\n"
        return out
    }

    private static func flatten(
        _ metadata: Logger.Metadata, prefix: String, into flat: inout [(String, Logger.MetadataValue)]
    ) {
        for (key, value) in metadata {
            if case .dictionary(let nested) = value {
                flatten(nested, prefix: prefix + key + ".", into: &flat)
            } else {
                flat.append((prefix + key, value))
            }
        }
    }

    /// `text` as a JSON string (the OTLP exporter's strings too: Tracing/OTLPTraceJSON.swift).
    static func appendString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                // Other control characters, and the line separators some readers break lines at.
                let value = scalar.value
                guard value < 0x20 || (0x7f...0x9f).contains(value) || value == 0x2028 || value == 0x2029 else {
                    out.unicodeScalars.append(scalar)
                    continue
                }
                let hex = String(value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        out += "\""
    }

    /// `2026-12-07T18:30:00.123Z`: UTC, from milliseconds since 1970 (days to a civil date by Howard Hinnant's
    /// algorithm, so that no formatter or time zone is consulted).
    package static func timestamp(_ milliseconds: Int64) -> String {
        let (days, inDay) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let (dayOffset, msOfDay) = inDay < 0 ? (days - 1, inDay + 86_400_000) : (days, inDay)
        let z = dayOffset + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = msOfDay % 1000
        let seconds = msOfDay / 1000
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(year)-\(two(month))-\(two(day))T\(two(seconds / 3600)):\(two(seconds / 60 % 60)):"
            + "\(two(seconds % 60)).\(fraction)Z"
    }
}
