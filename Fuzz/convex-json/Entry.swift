import FuzzSupport

/// The target's entry point: built for fuzzing (scripts/fuzz), libFuzzer's driver over `fuzzOneInput`; built plain (as
/// `swift build` builds it), a replay runner of files (scripts/fuzz --replay).
@main struct Entry {
    static func main() {
        #if FUZZING
            FuzzDriver.main()
        #else
            Replay.main("fuzz-convex-json", ConvexJSONProperties.check)
        #endif
    }
}
