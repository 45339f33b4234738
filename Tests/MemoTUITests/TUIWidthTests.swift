import MemoTUI
import MemoText
import MemoViewModels
import Testing

@Suite("TUI width: East Asian table, graphemes, truncate and wrap")
struct TUIWidthTests {
    @Test func hangulSyllablesAndJamoAreTwoColumns() {
        #expect(Character("한").columns == 2)
        #expect(Character("\u{AC00}").columns == 2)
        #expect(Character("\u{D7A3}").columns == 2)
        #expect(Character("\u{1100}").columns == 2)
        #expect("메모 앱".columns == 7)
        // A syllable spelled with conjoining jamo is one grapheme of width 2, not 2 + 0 + 0 or 6.
        #expect(Character("\u{1100}\u{1161}\u{11A8}").columns == 2)
    }

    @Test func cjkAndFullwidthFormsAreTwoColumnsAsciiOne() {
        #expect(Character("漢").columns == 2)
        #expect(Character("か").columns == 2)
        #expect(Character("Ａ").columns == 2)
        #expect(Character("a").columns == 1)
        #expect(Character("é").columns == 1)
        #expect(Character("…").columns == 1)
        #expect("abc".columns == 3)
    }

    @Test func emojiAndZWJSequencesAreTwoColumns() {
        #expect(Character("😀").columns == 2)
        #expect(Character("👨‍👩‍👧").columns == 2)
        #expect(Character("👍🏽").columns == 2)
        #expect(Character("🇰🇷").columns == 2)
        #expect(Character("❤️").columns == 2)
        #expect("👨‍👩‍👧👍".columns == 4)
    }

    @Test func combiningMarksJoinersAndVariationSelectorsTakeNoColumn() {
        #expect(Character("e\u{301}").columns == 1)
        #expect(ColumnWidth.width(of: Unicode.Scalar(0x301)!) == 0)
        #expect(ColumnWidth.width(of: Unicode.Scalar(0x200D)!) == 0)
        #expect(ColumnWidth.width(of: Unicode.Scalar(0xFE0F)!) == 0)
        #expect("e\u{301}\u{302}x".columns == 2)
    }

    @Test func truncateAddsAnEllipsisAndNeverExceedsTheWidth() {
        #expect(TextLayout.truncate("hello world", to: 8) == "hello w…")
        #expect(TextLayout.truncate("hello", to: 5) == "hello")
        #expect(TextLayout.truncate("한글 메모입니다", to: 6) == "한글 …")
        #expect(TextLayout.truncate("한글 메모입니다", to: 5) == "한글…")
        // The ellipsis takes the column a wide syllable cannot.
        #expect(TextLayout.truncate("가나다", to: 4) == "가…")
        #expect(TextLayout.truncate("anything", to: 0) == "")
        let samples = ["한글 메모입니다", "mixed 한글 and 漢字 😀 text", "👨‍👩‍👧👨‍👩‍👧👨‍👩‍👧", "e\u{301}e\u{301}e\u{301}"]
        for sample in samples {
            for width in 0...20 {
                #expect(TextLayout.truncate(sample, to: width).columns <= width, "\(sample) at \(width)")
            }
        }
    }

    @Test func wrapBreaksBetweenWordsAndKeepsNewlines() {
        #expect(TextLayout.wrap("the quick brown fox", to: 10) == ["the quick", "brown fox"])
        #expect(TextLayout.wrap("오늘은 메모 앱을 만든다", to: 10) == ["오늘은", "메모 앱을", "만든다"])
        #expect(TextLayout.wrap("one\n\ntwo", to: 10) == ["one", "", "two"])
        #expect(TextLayout.wrap("abcdefghij", to: 4) == ["abcd", "efgh", "ij"])
        #expect(TextLayout.wrap("가나다라마", to: 5) == ["가나", "다라", "마"])
    }

    @Test func wrapNeverSplitsAGraphemeNorExceedsTheWidth() {
        let samples = [
            "RxSwift로 MVVM-C 메모 앱 만들기: 목록, 보기, 쓰기 화면과 SceneCoordinator",
            "👨‍👩‍👧👨‍👩‍👧 e\u{301}e\u{301} 漢字かなカナ Ａｂｃ\nsecond line\r\nthird",
            "supercalifragilisticexpialidocious 한국어문장이띄어쓰기없이아주길게이어지는경우",
        ]
        for sample in samples {
            // A carriage return is content (shown as ␍), so "\r\n" leaves its "\r" on the line; "\n" breaks it.
            let graphemes = String(sample.map { $0 == "\r\n" ? "\r" : $0 }).filter { $0 != "\n" && $0 != " " }
            for width in 1...30 {
                let lines = TextLayout.wrap(sample, to: width)
                for line in lines { #expect(line.columns <= width, "\(line) at \(width)") }
                if width >= 2 {
                    // Nothing lost and nothing split: the graphemes, spaces aside, come back in order.
                    #expect(lines.joined().filter { $0 != " " } == graphemes, "at \(width)")
                }
            }
        }
    }

    @Test func aGraphemeWiderThanTheLineBecomesAnEllipsis() {
        #expect(TextLayout.wrap("가a", to: 1) == ["…", "a"])
    }
}
