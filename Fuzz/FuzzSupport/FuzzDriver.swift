#if FUZZING
    import CFuzzerDriver
    import Foundation

    /// The entry point of a fuzz target built for fuzzing (scripts/fuzz): libFuzzer's driver over the target's
    /// `LLVMFuzzerTestOneInput`, with the process's arguments, as libFuzzer's own `main` would run it. (SwiftPM links
    /// an executable's `main` to its module's entry point, so the target provides one that starts the driver.) The
    /// function is named through its C declaration: a Swift reference to it would define the C symbol a second time.
    public enum FuzzDriver {
        public static func main() -> Never {
            var argc = CommandLine.argc
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
            exit(LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput))
        }
    }
#endif
