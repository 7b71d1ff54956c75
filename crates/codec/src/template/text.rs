//! Template files as text. XML names its encoding: a byte-order mark, else the declaration's
//! `encoding`, else UTF-8. Exchanges publish template files in what their tools wrote: UTF-16
//! from Windows editors, GBK with Chinese comments, windows-1251 with Russian ones; the
//! template's own names and values are ASCII in every one of them.

use std::borrow::Cow;

use encoding_rs::Encoding;

/// Why a template file's bytes are not text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// Neither UTF-8 nor in an encoding that a byte-order mark or the XML declaration names.
    #[error(
        "not UTF-8 (a bad byte at offset {offset}), and neither a byte-order mark nor the XML \
         declaration names another encoding"
    )]
    NotUtf8 {
        /// Where the first byte that is not UTF-8 is.
        offset: usize,
    },
    /// The XML declaration names an encoding this reader does not know.
    #[error("the XML declaration names encoding {label:?}, which is not one this reader knows")]
    UnknownEncoding {
        /// The declared label.
        label: String,
    },
    /// The bytes are not valid in the encoding that the file names.
    #[error(
        "not valid {encoding} (a bad byte at offset {offset}), the encoding its {named_by} names"
    )]
    Malformed {
        /// The encoding's name.
        encoding: &'static str,
        /// "byte-order mark", "XML declaration" or "first bytes".
        named_by: &'static str,
        /// Where the first malformed byte sequence starts.
        offset: usize,
    },
}

/// The text of a template file's `bytes`, decoded as XML says (a byte-order mark, else the
/// declaration's `encoding` where the bytes are not UTF-8, else UTF-8). Borrowed when the
/// bytes are UTF-8 already.
pub fn template_text(bytes: &[u8]) -> Result<Cow<'_, str>, TextError> {
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        return decode(encoding, &bytes[bom..], "byte-order mark");
    }
    // UTF-16 without a byte-order mark, as some Windows tools write it (XML 1.0 Appendix F
    // tells it by its first character, `<`, and a zero byte beside it): a zero byte is
    // never XML text, so this is no UTF-8 document in any case.
    match bytes {
        [b'<', 0, ..] => return decode(encoding_rs::UTF_16LE, bytes, "first bytes"),
        [0, b'<', ..] => return decode(encoding_rs::UTF_16BE, bytes, "first bytes"),
        _ => {}
    }
    let bad = match std::str::from_utf8(bytes) {
        Ok(text) => return Ok(Cow::Borrowed(text)),
        Err(e) => e.valid_up_to(),
    };
    let Some(label) = declared_encoding(bytes) else {
        return Err(TextError::NotUtf8 { offset: bad });
    };
    match Encoding::for_label(label) {
        Some(encoding) => decode(encoding, bytes, "XML declaration"),
        None => Err(TextError::UnknownEncoding {
            label: String::from_utf8_lossy(label).into_owned(),
        }),
    }
}

fn decode<'a>(
    encoding: &'static Encoding,
    bytes: &'a [u8],
    named_by: &'static str,
) -> Result<Cow<'a, str>, TextError> {
    encoding
        .decode_without_bom_handling_and_without_replacement(bytes)
        .ok_or_else(|| TextError::Malformed {
            encoding: encoding.name(),
            named_by,
            offset: first_malformed(encoding, bytes),
        })
}

/// Where the first byte sequence that `encoding` cannot decode starts in `bytes`.
fn first_malformed(encoding: &'static Encoding, bytes: &[u8]) -> usize {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut out = [0u8; 4096];
    let mut at = 0;
    loop {
        let (result, read, _) =
            decoder.decode_to_utf8_without_replacement(&bytes[at..], &mut out, true);
        at += read;
        match result {
            encoding_rs::DecoderResult::Malformed(bad, after) => {
                return at - bad as usize - after as usize
            }
            encoding_rs::DecoderResult::OutputFull => continue,
            encoding_rs::DecoderResult::InputEmpty => return at,
        }
    }
}

/// The `encoding` pseudo-attribute of an XML declaration at the start of `bytes` (an
/// ASCII-compatible encoding: the declaration itself is ASCII).
fn declared_encoding(bytes: &[u8]) -> Option<&[u8]> {
    let decl = bytes.strip_prefix(b"<?xml")?;
    let end = decl.windows(2).position(|w| w == b"?>")?;
    let decl = &decl[..end];
    let at = decl.windows(8).position(|w| w == b"encoding")?;
    let rest = decl[at + 8..].trim_ascii_start().strip_prefix(b"=")?;
    let rest = rest.trim_ascii_start();
    let quote = *rest.first().filter(|q| matches!(q, b'"' | b'\''))?;
    let value = &rest[1..];
    Some(&value[..value.iter().position(|&b| b == quote)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = "<templates><!-- {} --><template name=\"T\" id=\"1\"/></templates>";

    fn with_comment(decl: &str, comment: &str) -> String {
        format!("{decl}{}", XML.replace("{}", comment))
    }

    #[test]
    fn utf8_is_borrowed() {
        let x = with_comment("", "caf\u{e9}");
        assert!(matches!(template_text(x.as_bytes()), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn a_byte_order_mark_names_the_encoding() {
        let x = with_comment("<?xml version=\"1.0\"?>", "\u{442}\u{435}\u{441}\u{442}");
        let mut le = vec![0xff, 0xfe];
        let mut be = vec![0xfe, 0xff];
        for u in x.encode_utf16() {
            le.extend(u.to_le_bytes());
            be.extend(u.to_be_bytes());
        }
        assert_eq!(template_text(&le).unwrap(), x);
        assert_eq!(template_text(&be).unwrap(), x);
        let mut utf8 = vec![0xef, 0xbb, 0xbf];
        utf8.extend(x.as_bytes());
        assert_eq!(template_text(&utf8).unwrap(), x);
    }

    #[test]
    fn the_declaration_names_the_encoding() {
        // "上海" in GBK, "тест" in windows-1251.
        for (label, comment, bytes) in [
            ("GBK", "\u{4e0a}\u{6d77}", &[0xc9, 0xcf, 0xba, 0xa3][..]),
            (
                "windows-1251",
                "\u{442}\u{435}\u{441}\u{442}",
                &[0xf2, 0xe5, 0xf1, 0xf2],
            ),
        ] {
            let decl = format!("<?xml version=\"1.0\" encoding = '{label}' ?>");
            let x = with_comment(&decl, comment);
            let (head, tail) = with_comment(&decl, "\u{0}")
                .split_once('\u{0}')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .unwrap();
            let raw = [head.as_bytes(), bytes, tail.as_bytes()].concat();
            assert_eq!(template_text(&raw).unwrap(), x, "{label}");
        }
    }

    #[test]
    fn undeclared_or_unknown_or_malformed_is_an_error() {
        let raw = [&b"<templates><!-- "[..], &[0xc9, 0xcf], b" --></templates>"].concat();
        assert_eq!(template_text(&raw), Err(TextError::NotUtf8 { offset: 16 }));
        let raw = [
            &b"<?xml version=\"1.0\" encoding=\"x-none\"?><a>"[..],
            &[0xff],
            b"</a>",
        ]
        .concat();
        assert_eq!(
            template_text(&raw),
            Err(TextError::UnknownEncoding {
                label: "x-none".into()
            })
        );
        // A lone lead byte of a two-byte GBK character at the end.
        let raw = [
            &b"<?xml version=\"1.0\" encoding=\"GBK\"?><a/>"[..],
            &[0x81],
        ]
        .concat();
        assert_eq!(
            template_text(&raw),
            Err(TextError::Malformed {
                encoding: "GBK",
                named_by: "XML declaration",
                offset: raw.len() - 1,
            })
        );
        // Latin-1 bytes in a file that says it is UTF-8: where the first one is.
        let raw = [
            &b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>caf"[..],
            &[0xe9],
            b"</a>",
        ]
        .concat();
        let e = template_text(&raw).unwrap_err();
        assert!(e.to_string().contains("offset 44"), "{e}");
    }

    #[test]
    fn utf16_without_a_byte_order_mark_is_told_by_its_first_character() {
        let x = with_comment("<?xml version=\"1.0\"?>", "\u{442}");
        let le: Vec<u8> = x.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = x.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(template_text(&le).unwrap(), x);
        assert_eq!(template_text(&be).unwrap(), x);
        // An unpaired surrogate: malformed, and where.
        let mut bad = le.clone();
        bad.extend([0x00, 0xd8, b'a', 0]);
        assert!(matches!(
            template_text(&bad),
            Err(TextError::Malformed { named_by: "first bytes", offset, .. }) if offset == le.len()
        ));
    }
}
