import Foundation

extension GatewaySettings {
    /// The `--help` text: overview, usage, then every declared setting by section with its environment variable and
    /// default, wrapped to `width` columns.
    package static func help(
        command: String, overview: String, discussion: String, declarations: [Setting] = declarations, width: Int = 80
    ) -> String {
        let indent = String(repeating: " ", count: 26)
        var lines = wrap("OVERVIEW: \(overview)", width: width, indent: "") + [""]
        lines += wrap(discussion, width: width, indent: "") + [""]
        lines += ["USAGE: \(command) [--<option> <value> ...]", ""]
        for section in Setting.Section.allCases {
            let settings = declarations.filter { $0.section == section }
            guard !settings.isEmpty else { continue }
            lines.append("\(section.rawValue.uppercased()):")
            for setting in settings {
                let label = "  " + (setting.flag.map { "\($0) \(setting.valueName)" } ?? setting.environment)
                let text =
                    plain(setting.documentation) + " Environment "
                    + (setting.flag == nil ? "only" : setting.environment) + "; default " + plain(setting.defaultText)
                    + "."
                var wrapped = wrap(text, width: width, indent: indent)
                if label.count < indent.count - 1 {
                    wrapped[0] =
                        label.padding(toLength: indent.count, withPad: " ", startingAt: 0)
                        + wrapped[0].dropFirst(indent.count)
                } else {
                    lines.append(label)
                }
                lines += wrapped
            }
            lines.append("")
        }
        lines += [
            "  --version".padding(toLength: indent.count, withPad: " ", startingAt: 0)
                + "Show the version and the commit of the build.",
            "  -h, --help".padding(toLength: indent.count, withPad: " ", startingAt: 0) + "Show help information.",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Markdown as plain text: without the backticks of code spans.
    private static func plain(_ markdown: String) -> String {
        markdown.replacingOccurrences(of: "`", with: "")
    }

    /// `text` in lines of at most `width` columns (a longer word gets a line of its own), each starting with
    /// `indent`.
    private static func wrap(_ text: String, width: Int, indent: String) -> [String] {
        var lines: [String] = []
        var line = indent
        for word in text.split(separator: " ") {
            if line.count > indent.count && line.count + 1 + word.count > width {
                lines.append(line)
                line = indent
            }
            line += (line.count > indent.count ? " " : "") + word
        }
        lines.append(line)
        return lines
    }
}
