//! `uuid`: 16 bytes, written as PostgreSQL writes them (`a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`,
//! lowercase) and read in every form PostgreSQL's `uuid_in` accepts: upper or lower case, inside
//! braces or not, with a hyphen after any group of four hex digits or none at all. Values order
//! by their bytes, as PostgreSQL's `uuid_cmp` (memcmp).

use std::fmt;

use crate::TypeError;

/// Reads PostgreSQL's text forms of a uuid.
pub(crate) fn parse_uuid(text: &str) -> Result<[u8; 16], TypeError> {
    let invalid = || {
        TypeError::InvalidTextRepresentation(format!(
            "invalid input syntax for type uuid: \"{text}\""
        ))
    };
    let inner = match text.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}').ok_or_else(invalid)?,
        None => text,
    };
    let digits = inner.as_bytes();
    let mut out = [0u8; 16];
    let mut at = 0;
    for (i, byte) in out.iter_mut().enumerate() {
        // PostgreSQL allows one hyphen after every group of four digits (not first, not last).
        if i > 0 && i % 2 == 0 && digits.get(at) == Some(&b'-') {
            at += 1;
        }
        let pair = digits.get(at..at + 2).ok_or_else(invalid)?;
        let hex = |d: u8| (d as char).to_digit(16).ok_or_else(invalid);
        *byte = (hex(pair[0])? << 4 | hex(pair[1])?) as u8;
        at += 2;
    }
    if at != digits.len() {
        return Err(invalid());
    }
    Ok(out)
}

/// The canonical text: lowercase, hyphens after the 4th, 6th, 8th and 10th byte.
pub(crate) fn write_uuid(f: &mut fmt::Formatter<'_>, bytes: &[u8; 16]) -> fmt::Result {
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            f.write_str("-")?;
        }
        write!(f, "{byte:02x}")?;
    }
    Ok(())
}

/// A version 4 (random) uuid from 16 random bytes: PostgreSQL's `gen_random_uuid`.
pub fn random_uuid(mut bytes: [u8; 16]) -> [u8; 16] {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    bytes
}
