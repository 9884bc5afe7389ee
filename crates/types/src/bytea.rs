//! `encode(bytea, format)` and `decode(text, format)`: binary strings as text in PostgreSQL's three
//! formats — `hex`, `base64` (lines of 76 characters; whitespace ignored when decoding) and
//! `escape` (zero bytes and bytes with the high bit set as `\ooo`, backslashes doubled). An
//! unknown format is 22023, as is input that is not in the format.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;

use crate::input::{decode_escaped, decode_hex};
use crate::TypeError;

/// Characters per line of base64 output, as PostgreSQL breaks it.
const BASE64_LINE: usize = 76;

/// Base64 input with or without its padding.
const BASE64_INPUT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// `encode(bytes, format)`.
pub fn encode(bytes: &[u8], format: &str) -> Result<String, TypeError> {
    Ok(match format.to_ascii_lowercase().as_str() {
        "hex" => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        "base64" => {
            let flat = STANDARD.encode(bytes);
            let lines: Vec<&str> = flat
                .as_bytes()
                .chunks(BASE64_LINE)
                .map(|line| std::str::from_utf8(line).expect("base64 is ASCII"))
                .collect();
            lines.join("\n")
        }
        "escape" => bytes.iter().map(|&b| escape_byte(b)).collect(),
        _ => return Err(unknown_format(format)),
    })
}

/// `decode(text, format)`.
pub fn decode(text: &str, format: &str) -> Result<Vec<u8>, TypeError> {
    match format.to_ascii_lowercase().as_str() {
        "hex" => decode_hex(text),
        "base64" => {
            let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            BASE64_INPUT.decode(compact).map_err(|err| {
                TypeError::InvalidParameterValue(format!("invalid base64 sequence: {err}"))
            })
        }
        "escape" => decode_escaped(text.as_bytes()),
        _ => Err(unknown_format(format)),
    }
}

fn escape_byte(byte: u8) -> String {
    match byte {
        b'\\' => "\\\\".to_owned(),
        0 | 0x80.. => format!("\\{byte:03o}"),
        _ => char::from(byte).to_string(),
    }
}

fn unknown_format(format: &str) -> TypeError {
    TypeError::InvalidParameterValue(format!("unrecognized encoding: \"{format}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_decodes_what_it_encodes() {
        let bytes: Vec<u8> = (0..=255).collect();
        for format in ["hex", "base64", "escape", "HEX"] {
            let text = encode(&bytes, format).unwrap();
            assert_eq!(decode(&text, format).unwrap(), bytes, "{format}");
        }
        let base64 = encode(&bytes, "base64").unwrap();
        assert!(base64.lines().all(|line| line.len() <= BASE64_LINE));
        assert_eq!(base64.lines().count(), 5);
    }

    #[test]
    fn formats_match_postgres() {
        assert_eq!(encode(b"\x01\xab", "hex").unwrap(), "01ab");
        assert_eq!(encode(b"hello", "base64").unwrap(), "aGVsbG8=");
        assert_eq!(decode("aGVsbG8", "base64").unwrap(), b"hello");
        assert_eq!(
            encode(b"a\\b\x00\xff", "escape").unwrap(),
            "a\\\\b\\000\\377"
        );
        assert!(matches!(
            encode(b"", "rot13"),
            Err(TypeError::InvalidParameterValue(_))
        ));
        assert!(decode("zz", "hex").is_err());
        assert!(decode("a$b=", "base64").is_err());
    }
}
