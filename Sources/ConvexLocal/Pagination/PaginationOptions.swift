import ConvexValues

/// The `paginationOpts` argument of a paginated query, as Convex's `paginationOptsValidator` describes it:
/// `{numItems, cursor, endCursor?, id?, maximumRowsRead?, maximumBytesRead?}`.
public struct PaginationOptions: Sendable, Hashable {
    /// How many items a page without an end cursor holds at most.
    public var numItems: Int
    /// Where the page starts (after this cursor); `nil` is the start of the query.
    public var cursor: String?
    /// Where the page ends (this cursor included); when set, `numItems` is ignored.
    public var endCursor: String?
    /// How many documents the page may read, matching or not; `nil` is ``PageReader/defaultMaximumRowsRead``.
    public var maximumRowsRead: Int?

    public init(numItems: Int, cursor: String? = nil, endCursor: String? = nil, maximumRowsRead: Int? = nil) {
        self.numItems = numItems
        self.cursor = cursor
        self.endCursor = endCursor
        self.maximumRowsRead = maximumRowsRead
    }

    /// Convex's `paginationOptsValidator`, for a paginated query's `args`.
    public static let validator: Validator = .object([
        "numItems": .float64,
        "cursor": .union([.string, .null]),
        "endCursor": .optional(.union([.string, .null])),
        "id": .optional(.float64),
        "maximumRowsRead": .optional(.float64),
        "maximumBytesRead": .optional(.float64),
    ])

    /// Reads `paginationOpts` from a function's argument value.
    /// - Throws: an uncaught error naming the field that is missing or of the wrong type.
    public init(_ value: ConvexValue?) throws {
        guard case .object(let fields)? = value else {
            throw FunctionCallError.userError("paginate() needs paginationOpts: {numItems, cursor}")
        }
        guard let numItems = fields["numItems"]?.wholeNumber, numItems >= 0 else {
            throw FunctionCallError.userError("paginationOpts.numItems must be a whole number of at least 0")
        }
        self.numItems = numItems
        cursor = try Self.optionalString(fields["cursor"], name: "cursor")
        endCursor = try Self.optionalString(fields["endCursor"], name: "endCursor")
        if let rows = fields["maximumRowsRead"] {
            guard let limit = rows.wholeNumber, limit > 0 else {
                throw FunctionCallError.userError("paginationOpts.maximumRowsRead must be a whole number above 0")
            }
            maximumRowsRead = limit
        }
    }

    private static func optionalString(_ value: ConvexValue?, name: String) throws -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw FunctionCallError.userError("paginationOpts.\(name) must be a string or null")
        }
    }
}

extension ConvexValue {
    /// A float64 or int64 holding a whole number that fits an `Int`.
    fileprivate var wholeNumber: Int? {
        switch self {
        case .float64(let d): d.rounded() == d && abs(d) < 9e15 ? Int(d) : nil
        case .int64(let i): Int(i)
        default: nil
        }
    }
}
