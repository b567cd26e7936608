import ConvexValues

/// The RFC 6902 operations that turn one Convex value into another, as small as a linear pass can make them:
///
/// - objects are compared field by field (`add`, `remove`, or the difference inside a field);
/// - arrays whose elements are all documents (objects with a string `_id`, unique on each side) are matched by
///   `_id`, so inserting, deleting or moving one document is one operation whatever its position;
/// - other arrays keep their common beginning and end, and the middle is changed element by element, with the
///   surplus added at or removed from its end;
/// - anything else that differs (a scalar, a change of type) is one `replace`.
///
/// Values are compared exactly (``ConvexValue``'s equality: a float's bits), so applying the operations to the JSON
/// of `old` in any output mode gives the JSON of `new` in that mode.
enum ValueDiff {
    static func operations(from old: ConvexValue, to new: ConvexValue) -> [PatchOperation] {
        var differ = Differ()
        differ.diff(old, new)
        return differ.operations
    }
}

/// One RFC 6902 operation; paths are lists of object keys and array indexes, rendered as JSON Pointers.
enum PatchOperation: Equatable, Sendable {
    case add(path: [PatchPathComponent], value: ConvexValue)
    case remove(path: [PatchPathComponent])
    case replace(path: [PatchPathComponent], value: ConvexValue)
    case move(from: [PatchPathComponent], path: [PatchPathComponent])
}

enum PatchPathComponent: Equatable, Sendable {
    case key(String)
    case index(Int)
}

private struct Differ {
    var operations: [PatchOperation] = []
    /// The path of the value being compared.
    var path: [PatchPathComponent] = []

    mutating func diff(_ old: ConvexValue, _ new: ConvexValue) {
        switch (old, new) {
        case (.object(let oldFields), .object(let newFields)):
            diffObjects(oldFields, newFields)
        case (.array(let oldItems), .array(let newItems)):
            if let oldIDs = Self.documentIDs(oldItems), let newIDs = Self.documentIDs(newItems) {
                diffDocuments(oldItems, oldIDs, newItems, newIDs)
            } else {
                diffArrays(oldItems, newItems)
            }
        default:
            if old != new { operations.append(.replace(path: path, value: new)) }
        }
    }

    private mutating func diffObjects(_ old: [String: ConvexValue], _ new: [String: ConvexValue]) {
        // Sorted, so that the same change gives the same operations in every process.
        for key in old.keys.sorted() where new[key] == nil {
            operations.append(.remove(path: path + [.key(key)]))
        }
        for key in new.keys.sorted() {
            let newValue = new[key]!
            if let oldValue = old[key] {
                within(.key(key)) { $0.diff(oldValue, newValue) }
            } else {
                operations.append(.add(path: path + [.key(key)], value: newValue))
            }
        }
    }

    private mutating func diffArrays(_ old: [ConvexValue], _ new: [ConvexValue]) {
        var prefix = 0
        while prefix < old.count, prefix < new.count, old[prefix] == new[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < old.count - prefix, suffix < new.count - prefix,
            old[old.count - 1 - suffix] == new[new.count - 1 - suffix]
        {
            suffix += 1
        }
        let oldMiddle = old.count - prefix - suffix
        let newMiddle = new.count - prefix - suffix
        for offset in 0..<min(oldMiddle, newMiddle) {
            within(.index(prefix + offset)) { $0.diff(old[prefix + offset], new[prefix + offset]) }
        }
        if newMiddle > oldMiddle {
            for offset in oldMiddle..<newMiddle {
                operations.append(.add(path: path + [.index(prefix + offset)], value: new[prefix + offset]))
            }
        } else {
            for _ in newMiddle..<oldMiddle {
                operations.append(.remove(path: path + [.index(prefix + newMiddle)]))
            }
        }
    }

    /// Arrays of documents, matched by `_id`: removals (from the end, so indexes hold), then the new order built
    /// from the front, moving or adding each document into place and comparing the ones that stayed.
    private mutating func diffDocuments(
        _ old: [ConvexValue], _ oldIDs: [String], _ new: [ConvexValue], _ newIDs: [String]
    ) {
        let kept = Set(newIDs)
        var current: [(id: String, value: ConvexValue)] = []
        current.reserveCapacity(old.count)
        for index in old.indices.reversed() where !kept.contains(oldIDs[index]) {
            operations.append(.remove(path: path + [.index(index)]))
        }
        for index in old.indices where kept.contains(oldIDs[index]) {
            current.append((oldIDs[index], old[index]))
        }
        let present = Set(current.map(\.id))
        for (index, id) in newIDs.enumerated() {
            if !present.contains(id) {
                operations.append(.add(path: path + [.index(index)], value: new[index]))
                current.insert((id, new[index]), at: index)
                continue
            }
            if current[index].id != id {
                // Before `index` everything is in place, so the document is further on.
                let from = current[(index + 1)...].firstIndex { $0.id == id }!
                operations.append(.move(from: path + [.index(from)], path: path + [.index(index)]))
                current.insert(current.remove(at: from), at: index)
            }
            let oldValue = current[index].value
            within(.index(index)) { $0.diff(oldValue, new[index]) }
        }
    }

    private mutating func within(_ component: PatchPathComponent, _ body: (inout Differ) -> Void) {
        path.append(component)
        body(&self)
        path.removeLast()
    }

    /// The `_id`s of an array whose elements are all objects with a string `_id`, each once; otherwise `nil`.
    static func documentIDs(_ items: [ConvexValue]) -> [String]? {
        var ids: [String] = []
        ids.reserveCapacity(items.count)
        var seen = Set<String>()
        for item in items {
            guard case .object(let fields) = item, case .string(let id)? = fields["_id"], seen.insert(id).inserted
            else { return nil }
            ids.append(id)
        }
        return ids
    }
}
