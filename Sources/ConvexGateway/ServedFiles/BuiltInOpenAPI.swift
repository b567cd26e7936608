/// The gateway's OpenAPI document (openapi/openapi.yaml) as built into the binary, so that an installed executable or
/// the container image serves `/openapi.yaml` with no file beside it; `--openapi-file` serves another.
enum BuiltInOpenAPI {
    static let document = PackageResources.openapi_yaml
}
