import Testing

@testable import MemoClient

/// `--server a, b`: the addresses split at commas and trimmed of the blanks CharacterSet.whitespaces names (space,
/// tab, Unicode's space separators), without Foundation.
@Suite struct ClientConfigurationServersTests {
    private func servers(_ server: String) -> [String] {
        ClientConfiguration(server: server, certificatesDirectory: "/nowhere").servers
    }

    @Test func addressesAreSplitAtCommasAndTrimmedOfSpacesAndTabs() {
        #expect(servers("a:1, \tb:2 ,c:3\t") == ["a:1", "b:2", "c:3"])
        #expect(servers("[::1]:7070") == ["[::1]:7070"])
    }

    @Test func unicodeSpaceSeparatorsAreTrimmedAsFoundationDid() {
        // U+00A0 no-break space and U+3000 ideographic space are space separators (Zs); a letter is kept.
        #expect(servers("\u{00A0}a:1\u{3000},\u{3000}é:2") == ["a:1", "é:2"])
    }

    @Test func emptyPartsAreDroppedAndAllBlankKeepsTheWholeValue() {
        #expect(servers("a:1,, ,b:2") == ["a:1", "b:2"])
        #expect(servers(" , ") == [" , "])
    }
}
