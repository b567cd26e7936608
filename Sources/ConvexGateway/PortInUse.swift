/// ``Gateway/start()`` could not listen: another process holds the address and port.
public struct PortInUse: Error, CustomStringConvertible {
    public let host: String
    public let port: Int

    public var description: String { "port \(port) is in use on \(host)" }
}
