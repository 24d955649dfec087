//! Base64 text (standard or URL-safe alphabet, padded or not) to bytes.

use super::*;

/// Decodes base64 text for `kwire decode --base64`: the standard (`+`, `/`) or URL-safe
/// (`-`, `_`) alphabet, chosen by which characters appear, with or without `=` padding.
/// All whitespace (including newlines) is ignored. Empty input gives no bytes.
///
/// # Errors
/// A [`HexError`] naming the line and column of a character outside both alphabets, of the
/// first character that mixes the two alphabets, of misplaced `=` padding, or (for a bad
/// length or stray bits in the last symbol) of the last symbol.
pub fn parse_base64(text: &str) -> Result<Vec<u8>, HexError> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine as _;

    // Every symbol with its position.
    let mut syms: Vec<u8> = Vec::new();
    let mut pos: Vec<(usize, usize)> = Vec::new();
    let mut std_at = None;
    let mut url_at = None;
    let mut pad_at: Option<usize> = None;
    for l in lines(text) {
        for (col, c) in l.text.chars().enumerate() {
            let here = (l.no, col + 1);
            let err = |kind| HexError {
                line: here.0,
                column: here.1,
                kind,
            };
            if c.is_whitespace() {
                continue;
            }
            match c {
                'A'..='Z' | 'a'..='z' | '0'..='9' | '+' | '/' | '-' | '_' => {
                    if pad_at.is_some() {
                        return Err(err(HexErrorKind::Base64Padding));
                    }
                    if matches!(c, '+' | '/') {
                        std_at.get_or_insert(here);
                        if url_at.is_some() {
                            return Err(err(HexErrorKind::MixedBase64Alphabets));
                        }
                    }
                    if matches!(c, '-' | '_') {
                        url_at.get_or_insert(here);
                        if std_at.is_some() {
                            return Err(err(HexErrorKind::MixedBase64Alphabets));
                        }
                    }
                }
                '=' => {
                    let first = *pad_at.get_or_insert(syms.len());
                    // Padding completes a group of four begun by two or three symbols.
                    if first % 4 < 2 || syms.len() - first >= 4 - first % 4 {
                        return Err(err(HexErrorKind::Base64Padding));
                    }
                }
                _ => return Err(err(HexErrorKind::InvalidCharacter(c))),
            }
            syms.push(c as u8);
            pos.push(here);
        }
    }
    let alphabet = if url_at.is_some() {
        &base64::alphabet::URL_SAFE
    } else {
        &base64::alphabet::STANDARD
    };
    let engine = GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let at = |i: usize, kind| {
        let (line, column) = pos.get(i).or(pos.last()).copied().unwrap_or((1, 1));
        HexError { line, column, kind }
    };
    engine.decode(&syms).map_err(|e| match e {
        base64::DecodeError::InvalidByte(i, b) => {
            if b == b'=' {
                at(i, HexErrorKind::Base64Padding)
            } else {
                at(i, HexErrorKind::InvalidCharacter(b as char))
            }
        }
        base64::DecodeError::InvalidLastSymbol(i, _) => at(i, HexErrorKind::Base64Length),
        base64::DecodeError::InvalidLength(_) => at(
            pad_at.unwrap_or(syms.len()).saturating_sub(1),
            HexErrorKind::Base64Length,
        ),
        base64::DecodeError::InvalidPadding => at(
            pad_at.unwrap_or(syms.len().saturating_sub(1)),
            HexErrorKind::Base64Padding,
        ),
    })
}
