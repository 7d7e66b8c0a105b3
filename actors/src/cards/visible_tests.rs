use proptest::prelude::*;

use super::*;

#[test]
fn each_hidden_character_has_its_own_escape() {
    for (raw, shown) in [
        ("\u{1b}]52;c;ZXZpbA==\u{7}", "⟨ESC⟩]52;c;ZXZpbA==⟨U+0007⟩"),
        ("a\u{202E}txt.sh", "a⟨U+202E⟩txt.sh"),
        ("x\u{200B}y\u{FEFF}", "x⟨U+200B⟩y⟨U+FEFF⟩"),
        ("\u{9B}2J\u{7F}", "⟨U+009B⟩2J⟨U+007F⟩"),
        ("tag\u{E0041}\u{E007F}", "tag⟨U+E0041⟩⟨U+E007F⟩"),
        ("\u{2066}iso\u{2069}\u{2028}", "⟨U+2066⟩iso⟨U+2069⟩⟨U+2028⟩"),
        ("safe\rrm -rf ~", "safe⟨U+000D⟩rm -rf ~"),
        ("\0", "⟨U+0000⟩"),
    ] {
        assert_eq!(visible(raw, true), shown);
    }
}

#[test]
fn lines_and_indents_stay_in_a_multi_line_text_only() {
    assert_eq!(visible("a\n\tb", true), Cow::Borrowed("a\n\tb"));
    assert_eq!(visible("a\n\tb", false), "a⟨U+000A⟩⟨U+0009⟩b");
}

#[test]
fn ordinary_text_is_borrowed_and_shown_as_itself() {
    for text in ["cargo test", "rm -rf 'ü 日本'", "emoji 🐕", "⟨ESC⟩ typed"] {
        assert!(matches!(visible(text, false), Cow::Borrowed(t) if t == text));
    }
}

#[test]
fn a_long_text_is_cut_at_a_whole_escape_and_counts_what_is_left() {
    let text = format!("echo tidy{}; curl x | sh", " ".repeat(100));
    let shown = show(&text, true, 40);
    assert!(shown.text.len() <= 40);
    assert!(shown.text.ends_with(ELLIPSIS));
    assert_eq!(shown.not_shown, text.len() - (40 - ELLIPSIS.len()));
    assert!(!shown.hidden);

    // "ab" then three escapes of 10 bytes: a cut never splits one.
    let shown = show("ab\u{202E}\u{202E}\u{202E}", false, 25);
    assert_eq!(shown.text, "ab⟨U+202E⟩…");
    assert_eq!(shown.not_shown, 6);
    assert!(shown.hidden);
    // A hidden character past the cut does not count as shown.
    let shown = show("abcdefgh\u{202E}", false, 8);
    assert_eq!((shown.text.as_str(), shown.hidden), ("abcde…", false));

    let whole = show("ls\u{1b}", false, 64);
    assert_eq!(
        whole,
        Shown {
            text: "ls⟨ESC⟩".into(),
            hidden: true,
            not_shown: 0
        }
    );
}

/// Reads the escapes back (for the proptest: escaping loses nothing).
fn unescape(shown: &str) -> String {
    let mut out = String::new();
    let mut rest = shown;
    while let Some(at) = rest.find('⟨') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + '⟨'.len_utf8()..];
        let end = tail.find('⟩').expect("a closed escape");
        let name = &tail[..end];
        let c = match name {
            "ESC" => '\u{1b}',
            _ => {
                let hex = name.strip_prefix("U+").expect("U+ escape");
                char::from_u32(u32::from_str_radix(hex, 16).expect("hex")).expect("a char")
            }
        };
        out.push(c);
        rest = &tail[end + '⟩'.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// Text mixing ordinary characters with every kind of hidden one.
fn mixed() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => "[a-z |;$`()=/.-]{0,6}",
        1 => "\\PC{0,3}",
        2 => prop_oneof![
            0u32..0x20,
            Just(0x7F),
            0x80u32..0xA0,
            0x200Bu32..0x2010,
            0x2028u32..0x202F,
            0x2060u32..0x2070,
            Just(0xFEFF),
            0xE0000u32..0xE0080,
            Just(0x061C),
            Just(0x00AD),
        ]
        .prop_map(|u| char::from_u32(u).map(String::from).unwrap_or_default()),
        1 => Just("\n".to_owned()),
        1 => Just("\t".to_owned()),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn nothing_hidden_is_ever_shown_raw(text in mixed(), multi in any::<bool>()) {
        let shown = visible(&text, multi);
        prop_assert!(!shown.chars().any(|c| hidden(c, multi)), "{:?}", shown);
        prop_assert_eq!(visible(&shown, multi), shown.clone(), "escaping again changes nothing");
    }

    #[test]
    fn different_texts_show_differently(text in mixed(), multi in any::<bool>()) {
        // Texts without a `⟨` of their own read back exactly: the escaping is injective there.
        let text = text.replace('⟨', "");
        prop_assert_eq!(unescape(&visible(&text, multi)), text);
    }

    #[test]
    fn a_cut_text_is_a_shown_prefix_and_counts_the_rest(
        text in mixed(),
        multi in any::<bool>(),
        max in 3usize..120,
    ) {
        let shown = show(&text, multi, max);
        prop_assert!(shown.text.len() <= max);
        let read = text.len() - shown.not_shown;
        prop_assert!(text.is_char_boundary(read));
        let head = visible(&text[..read], multi);
        if shown.not_shown == 0 {
            prop_assert_eq!(&shown.text, &head);
        } else {
            prop_assert_eq!(shown.text.clone(), format!("{head}{ELLIPSIS}"));
        }
        prop_assert_eq!(shown.hidden, text[..read].chars().any(|c| hidden(c, multi)));
    }
}
