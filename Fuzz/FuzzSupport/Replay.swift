import Foundation

/// Runs a fuzz target's property over files, without libFuzzer: the same executable built without
/// `-sanitize=fuzzer` (as `swift build` builds it) replays the committed corpus and every saved crash, so the inputs
/// the fuzzer found stay regression tests of the plain build (scripts/fuzz --replay).
///
/// Arguments: files or directories (every regular file in them, by name). Exits 0 when every input held its
/// properties; a broken property aborts, naming the input first.
public enum Replay {
    public static func main(_ name: String, _ check: ([UInt8]) -> Void) -> Never {
        var inputs: [String] = []
        for argument in CommandLine.arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("\(name): no such file or directory: \(argument)\n".utf8))
                exit(2)
            }
            if isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
                inputs += names.sorted().map { "\(argument)/\($0)" }
            } else {
                inputs.append(argument)
            }
        }
        guard !inputs.isEmpty else {
            FileHandle.standardError.write(
                Data("usage: \(name) FILE|DIRECTORY…  (replays inputs through the target)\n".utf8))
            exit(2)
        }
        for path in inputs {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            replayedInput = path
            check(Array(data))
        }
        print("\(name): \(inputs.count) inputs held every property")
        exit(0)
    }
}

/// The file being replayed, named by a failure.
nonisolated(unsafe) var replayedInput: String?
