// The client's clock (`ConvexClientConfiguration.clock`) is an `ElapsedClock`: users of the client see it without a
// second import.
@_exported import TimeSource
