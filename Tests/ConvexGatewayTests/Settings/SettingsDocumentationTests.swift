import Foundation
import Testing

@testable import ConvexGateway

/// The settings tables of docs/configuration.md ("## Configuration", "## Access controls and limits") hold exactly the
/// declared settings (GatewaySettings+Declarations.swift), in order: flag, environment variable, default and meaning,
/// secrets marked. On a mismatch the failure shows the tables the declarations call for.
@Suite struct SettingsDocumentationTests {
    static let page = "docs/configuration.md"

    @Test func theConfigurationPageMatchesTheDeclarations() throws {
        let page = try String(
            contentsOf: GatewayProcess.packageRoot.appendingPathComponent(Self.page), encoding: .utf8)
        let problems = SettingsTables.problems(page: page, declarations: GatewaySettings.declarations)
        #expect(
            problems.isEmpty,
            """
            \(Self.page)'s settings tables differ from the declarations:
            \(problems.map { "  - \($0)" }.joined(separator: "\n"))
            The tables the declarations call for:
            \(SettingsTables.expected(GatewaySettings.declarations))
            """)
    }

    /// The page as the declarations would write it: the check must pass on it, and fail on each kind of drift.
    static let faithful = SettingsTables.expected(GatewaySettings.declarations)

    @Test func theGeneratedTablesPass() {
        #expect(SettingsTables.problems(page: Self.faithful, declarations: GatewaySettings.declarations) == [])
    }

    @Test func anUndocumentedSettingFails() {
        let added = Setting.integer("--new-limit", "GATEWAY_NEW_LIMIT", \.localPort, in: 0...1, help: "New.")
        let problems = SettingsTables.problems(
            page: Self.faithful, declarations: GatewaySettings.declarations + [added])
        #expect(problems.contains { $0.contains("GATEWAY_NEW_LIMIT") && $0.contains("not documented") }, "\(problems)")
    }

    @Test func aDocumentedSettingThatIsNotDeclaredFails() {
        let declarations = GatewaySettings.declarations.filter { $0.environment != "GATEWAY_THREADS" }
        let problems = SettingsTables.problems(page: Self.faithful, declarations: declarations)
        #expect(problems.contains { $0.contains("GATEWAY_THREADS") && $0.contains("not declared") }, "\(problems)")
    }

    @Test(arguments: [
        ("`GATEWAY_PORT` | `8080`", "`GATEWAY_PORT` | `8081`", "GATEWAY_PORT"),
        ("| `--port` | `GATEWAY_PORT`", "| `--port` | `GATEWAY_LISTEN_PORT`", "GATEWAY_PORT"),
        ("| `--port` | `GATEWAY_PORT`", "| `--listen-port` | `GATEWAY_PORT`", "GATEWAY_PORT"),
        ("`--admin-key-file`, not both. Secret: never logged.", "`--admin-key-file`, not both.", "CONVEX_ADMIN_KEY"),
    ])
    func aChangedRowFails(original: String, changed: String, setting: String) {
        #expect(Self.faithful.contains(original))
        let page = Self.faithful.replacingOccurrences(of: original, with: changed)
        let problems = SettingsTables.problems(page: page, declarations: GatewaySettings.declarations)
        #expect(problems.contains { $0.contains(setting) }, "\(problems)")
    }

    @Test func aSecretWithoutItsMarkFails() {
        let mark = "`--api-key-file`, not both. Secret: never logged."
        #expect(Self.faithful.contains(mark))
        let page = Self.faithful.replacingOccurrences(of: mark, with: "`--api-key-file`, not both.")
        let problems = SettingsTables.problems(page: page, declarations: GatewaySettings.declarations)
        #expect(problems.contains { $0.hasPrefix("GATEWAY_API_KEY: declared secret") }, "\(problems)")
    }

    @Test func aSecretMarkOnAnOrdinarySettingFails() {
        let page = Self.faithful.replacingOccurrences(
            of: "HTTP worker threads.", with: "HTTP worker threads. Secret: never logged.")
        let problems = SettingsTables.problems(page: page, declarations: GatewaySettings.declarations)
        #expect(problems.contains { $0.hasPrefix("GATEWAY_THREADS: declared not secret") }, "\(problems)")
    }

    @Test func rowsOutOfOrderFail() throws {
        let lines = Self.faithful.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let host = try #require(lines.firstIndex { $0.contains("`GATEWAY_HOST`") })
        var swapped = lines
        swapped.swapAt(host, host + 1)
        let problems = SettingsTables.problems(
            page: swapped.joined(separator: "\n"), declarations: GatewaySettings.declarations)
        #expect(problems.contains { $0.contains("order") }, "\(problems)")
    }

    @Test func aMissingSectionFails() {
        let page = Self.faithful.replacingOccurrences(of: "## Access controls and limits", with: "## Access")
        let problems = SettingsTables.problems(page: page, declarations: GatewaySettings.declarations)
        #expect(problems.contains { $0.contains("Access controls and limits") }, "\(problems)")
    }
}

/// The settings tables of docs/configuration.md: `| Flag | Environment | Default | Meaning |`, one per
/// `Setting.Section`, under a `## <section>` heading.
enum SettingsTables {
    static let header = "| Flag | Environment | Default | Meaning |"

    /// One table row as the declaration writes it.
    static func row(_ setting: Setting) -> String {
        let flag = setting.flag.map { "`\($0)`" } ?? "—"
        return "| \(flag) | `\(setting.environment)` | \(setting.defaultText) | \(setting.documentation) |"
    }

    /// Every section's heading and table, as the declarations write them.
    static func expected(_ declarations: [Setting]) -> String {
        Setting.Section.allCases.map { section in
            (["## \(section.rawValue)", "", header, "| --- | --- | --- | --- |"]
                + declarations.filter { $0.section == section }.map(row)).joined(separator: "\n")
        }.joined(separator: "\n\n") + "\n"
    }

    /// What differs between the page's tables and the declarations; empty when they match.
    static func problems(page: String, declarations: [Setting]) -> [String] {
        var problems: [String] = []
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        for section in Setting.Section.allCases {
            let title = "'## \(section.rawValue)'"
            guard let heading = lines.firstIndex(of: "## \(section.rawValue)") else {
                problems.append("the page has no \(title) section")
                continue
            }
            let table = lines[(heading + 1)...].drop { !$0.hasPrefix("|") }.prefix { $0.hasPrefix("|") }
            guard table.first == header else {
                problems.append("the table under \(title) must start with \(header)")
                continue
            }
            let rows = table.dropFirst(2).map(cells)
            let declared = declarations.filter { $0.section == section }
            let documented = rows.map { $0.count > 1 ? unquoted($0[1]) : "" }
            for setting in declared {
                guard let cells = rows.first(where: { $0.count > 1 && unquoted($0[1]) == setting.environment }) else {
                    problems.append("\(setting.name) is declared but not documented in the \(title) table")
                    continue
                }
                problems += differences(setting, cells)
            }
            for environment in documented where !declared.contains(where: { $0.environment == environment }) {
                problems.append("the \(title) table documents \(environment), which is not declared in that section")
            }
            let expectedOrder = declared.map(\.environment)
            if Set(documented) == Set(expectedOrder) && documented != expectedOrder {
                problems.append("the \(title) table's rows are not in declaration order: \(expectedOrder)")
            }
        }
        return problems
    }

    private static func differences(_ setting: Setting, _ cells: [String]) -> [String] {
        guard cells.count == 4 else {
            return [
                "\(setting.environment): its row has \(cells.count) cells, not 4 (flag, environment, default, meaning)"
            ]
        }
        var problems: [String] = []
        let flag = setting.flag.map { "`\($0)`" } ?? "—"
        if cells[0] != flag { problems.append("\(setting.environment): the flag is \(cells[0]), declared \(flag)") }
        if cells[2] != setting.defaultText {
            problems.append("\(setting.environment): the default is '\(cells[2])', declared '\(setting.defaultText)'")
        }
        let marked = cells[3].contains("Secret: never logged.")
        if marked != setting.isSecret {
            problems.append(
                "\(setting.environment): declared \(setting.isSecret ? "secret" : "not secret"), but its meaning "
                    + (marked ? "says it is secret" : "does not say 'Secret: never logged.'"))
        }
        if cells[3] != setting.documentation {
            problems.append("\(setting.environment): the meaning is '\(cells[3])', declared '\(setting.documentation)'")
        }
        return problems
    }

    /// The cells of a `| a | b |` row, trimmed.
    private static func cells(_ row: String) -> [String] {
        var cells = row.split(separator: "|", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if cells.first == "" { cells.removeFirst() }
        if cells.last == "" { cells.removeLast() }
        return cells
    }

    private static func unquoted(_ cell: String) -> String {
        cell.trimmingCharacters(in: CharacterSet(charactersIn: "`"))
    }
}
