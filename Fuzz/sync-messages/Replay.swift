#if !FUZZING
    import FuzzSupport

    /// Without libFuzzer (a plain `swift build`), the target replays files: scripts/fuzz --replay.
    @main struct ReplayCorpus {
        static func main() { Replay.main("fuzz-sync-messages", SyncMessageProperties.check) }
    }
#endif
