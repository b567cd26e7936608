import MicroHTTPD
import Testing

/// The query parameters are read from the raw target by libmicrohttpd's rules (`MHD_parse_arguments_`).
@Suite struct QueryItemsTests {
    @Test(
        "splits at &, each parameter at its first =",
        arguments: [
            ("a=1&b=2", [HTTPQueryItem(name: "a", value: "1"), HTTPQueryItem(name: "b", value: "2")]),
            ("a=1=2", [HTTPQueryItem(name: "a", value: "1=2")]),
            ("flag&b=", [HTTPQueryItem(name: "flag", value: nil), HTTPQueryItem(name: "b", value: "")]),
            ("=x", [HTTPQueryItem(name: "", value: "x")]),
            // An empty parameter in the middle or at the start is a name-only one; an empty last one is none.
            (
                "a&&b",
                [
                    HTTPQueryItem(name: "a", value: nil), HTTPQueryItem(name: "", value: nil),
                    .init(name: "b", value: nil),
                ]
            ),
            ("&a", [HTTPQueryItem(name: "", value: nil), HTTPQueryItem(name: "a", value: nil)]),
            ("a=1&", [HTTPQueryItem(name: "a", value: "1")]),
            ("", []),
        ])
    func split(query: String, items: [HTTPQueryItem]) {
        #expect(HTTPQueryItem.items(inRawQuery: query[...]) == items)
    }

    @Test(
        "+ is a space, a valid %HH its byte, an invalid escape stays",
        arguments: [
            ("a+b=c+d", HTTPQueryItem(name: "a b", value: "c d")),
            ("k=%41%62%2b%26%3D", HTTPQueryItem(name: "k", value: "Ab+&=")),
            ("k=%zz%4%", HTTPQueryItem(name: "k", value: "%zz%4%")),
            ("k=x%00y", HTTPQueryItem(name: "k", value: "x\u{0}y")),
            ("k=%C3%A9", HTTPQueryItem(name: "k", value: "é")),
            ("k=%FF", HTTPQueryItem(name: "k", value: "\u{FFFD}")),
        ])
    func decode(query: String, item: HTTPQueryItem) {
        #expect(HTTPQueryItem.items(inRawQuery: query[...]) == [item])
    }
}
