import MockCloudHTTP
import MockCloudJSON
import MockCloudStore
import MockCloudSystem
import Testing

/// `application/x-www-form-urlencoded` queries, as the feed reads them.
@Suite struct QueryStringTests {
    @Test func partsNamesAndValuesAreDecoded() throws {
        let query = try #require(QueryString("&anchor=0.0.0&&limit=10&exclude-source=a+b%2Bc%26d&flag&=v&limit=99&"))
        #expect(query.names == ["anchor", "limit", "exclude-source", "flag", "", "limit"])
        #expect(query.values == ["0.0.0", "10", "a b+c&d", "", "v", "99"])
        #expect(query["limit"] == "10")  // the first value given wins
        #expect(query["flag"] == "")
        #expect(query["missing"] == nil)
        #expect(try #require(QueryString("")).names.isEmpty)
    }

    @Test(arguments: ["a=%FF", "a=%4", "a=%zz", "%=1", "a=%C3"])
    func malformedEscapesAndInvalidUTF8AreRefused(query: String) {
        #expect(QueryString(query) == nil)
    }
}
