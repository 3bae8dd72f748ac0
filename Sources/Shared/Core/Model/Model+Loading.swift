import Foundation

extension Model {
    /// Loads and validates a model file.
    /// - Throws: ``ModelError`` naming the file when it cannot be read, or the problem when it is invalid.
    public static func load(contentsOf url: URL) throws -> Model {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ModelError(.unreadable, "cannot read model file \(url.path): \(error.localizedDescription)")
        }
        return try decode(data, source: url.path)
    }

    /// Decodes and validates a model from the JSON of a model file.
    public static func decode(_ json: Data, source: String = "model") throws -> Model {
        do {
            return try JSONDecoder().decode(Model.self, from: json)
        } catch let error as ModelError {
            throw error
        } catch let DecodingError.keyNotFound(key, context) {
            throw ModelError(.malformed, "\(source): missing \"\(key.stringValue)\" at \(path(context))")
        } catch let DecodingError.typeMismatch(type, context) {
            throw ModelError(.malformed, "\(source): expected \(type) at \(path(context))")
        } catch let DecodingError.valueNotFound(type, context) {
            throw ModelError(.malformed, "\(source): expected \(type) at \(path(context)), found null")
        } catch let DecodingError.dataCorrupted(context) {
            throw ModelError(.malformed, "\(source) is not valid JSON: \(context.debugDescription)")
        } catch {
            throw ModelError(.malformed, "\(source): \(error)")
        }
    }

    /// The model as model-file JSON, with keys sorted so equal models encode equally.
    public func encodedJSON() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain structs of strings and bools cannot fail.
        return (try? encoder.encode(self)) ?? Data()
    }

    private static func path(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? "the top level" : path
    }
}
