import Foundation

/// A store of `Codable` objects by key, such as `UserDefaults`.
public protocol ObjectSavable {
    /// Stores `object` under `forKey`.
    /// - Throws: ``ObjectSavableError/unableToEncode`` when the object cannot be encoded.
    func setObject<Object>(_ object: Object, forKey: String) throws where Object: Encodable

    /// Reads the object stored under `forKey` as a `type`.
    /// - Throws: ``ObjectSavableError/noValue`` when nothing is stored under the key,
    ///   ``ObjectSavableError/unableToDecode`` when the stored data is not a `type`.
    func getObject<Object>(forKey: String, castTo type: Object.Type) throws -> Object where Object: Decodable
}

/// Why an ``ObjectSavable`` store could not save or load an object.
public enum ObjectSavableError: String, LocalizedError, Sendable {
    case unableToEncode = "Unable to encode object into data"
    case noValue = "No data object found for the given key"
    case unableToDecode = "Unable to decode object into given type"

    public var errorDescription: String? { rawValue }
}

/// Objects are stored as Convex JSON (``ConvexEncoder``), so int64 values, `Data`, NaN and −0.0 survive exactly and
/// the `@ConvexInt`/`@ConvexFloat` wrappers round-trip. Works with swift-corelibs-foundation's `UserDefaults` on Linux
/// (use `UserDefaults(suiteName:)` to keep a store apart).
extension UserDefaults: ObjectSavable {
    public func setObject<Object>(_ object: Object, forKey: String) throws where Object: Encodable {
        let bytes: [UInt8]
        do {
            bytes = try ConvexEncoder().encode(object)
        } catch {
            throw ObjectSavableError.unableToEncode
        }
        set(Data(bytes), forKey: forKey)
    }

    public func getObject<Object>(forKey: String, castTo type: Object.Type) throws -> Object where Object: Decodable {
        guard let data = data(forKey: forKey) else { throw ObjectSavableError.noValue }
        do {
            return try ConvexDecoder().decode(type, from: data)
        } catch {
            throw ObjectSavableError.unableToDecode
        }
    }
}
