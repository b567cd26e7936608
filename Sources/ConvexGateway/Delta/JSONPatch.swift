import ConvexValues

/// Renders ``PatchOperation``s as an RFC 6902 JSON Patch document (a JSON array), with values in an output mode.
enum JSONPatch {
    /// The JSON array of `operations`, values rendered by `render`; `nil` once it would exceed `budget` bytes.
    static func render(
        _ operations: [PatchOperation], budget: Int = .max, value render: (ConvexValue) -> [UInt8]
    ) -> [UInt8]? {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (index, operation) in operations.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            switch operation {
            case .add(let path, let value):
                open("add", path, into: &out)
                out += #","value":"#.utf8
                out += render(value)
            case .remove(let path):
                open("remove", path, into: &out)
            case .replace(let path, let value):
                open("replace", path, into: &out)
                out += #","value":"#.utf8
                out += render(value)
            case .move(let from, let path):
                open("move", path, into: &out)
                out += #","from":"#.utf8
                appendPointer(from, into: &out)
            }
            out.append(UInt8(ascii: "}"))
            if out.count > budget { return nil }
        }
        out.append(UInt8(ascii: "]"))
        return out.count > budget ? nil : out
    }

    private static func open(_ op: String, _ path: [PatchPathComponent], into out: inout [UInt8]) {
        out += #"{"op":""#.utf8
        out += op.utf8
        out += #"","path":"#.utf8
        appendPointer(path, into: &out)
    }

    /// A JSON Pointer (RFC 6901) as a JSON string: `~` is written `~0` and `/` is written `~1` in keys.
    static func appendPointer(_ path: [PatchPathComponent], into out: inout [UInt8]) {
        var pointer = ""
        for component in path {
            pointer += "/"
            switch component {
            case .index(let index):
                pointer += String(index)
            case .key(let key):
                pointer += key.replacing("~", with: "~0").replacing("/", with: "~1")
            }
        }
        out += ConvexValue.string(pointer).json(mode: .plain)
    }
}
