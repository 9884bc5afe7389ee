//! COPY's text and CSV data formats: reading the rows a client streams in, writing the rows a
//! query streams out.
//!
//! Text format: one row per line, fields separated by the delimiter (tab), `\N` for NULL, and
//! backslash escapes (`\t`, `\n`, `\\`, `\b`, `\f`, `\r`, `\v`, octal `\ooo`, hex `\xhh`, and
//! `\c` for any other character c). CSV: fields separated by `,`, quoted with `"` when needed
//! (a doubled quote inside stands for one), an unquoted empty field is NULL and a quoted one an
//! empty string, and a quoted field may span lines. In both, a line holding only `\.` ends the
//! data, and a `\r` before the newline is dropped.
//!
//! The reader is incremental: data arrives in CopyData chunks cut anywhere, even inside a UTF-8
//! character or a quoted CSV field, so it keeps the unfinished tail until more comes. A text
//! field without escapes is handed on as a slice of the reader's buffer, not copied.

use std::borrow::Cow;
use std::fmt::Write as _;

use steady_sql::values::Value;
use steady_sql::SqlError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyFormat {
    #[default]
    Text,
    Csv,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ForceQuote {
    #[default]
    None,
    All,
    Columns(Vec<String>),
}

/// The options of a COPY statement, as written (defaults applied by the accessors).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub header: bool,
    pub delimiter: Option<String>,
    pub null: Option<String>,
    pub quote: Option<String>,
    pub escape: Option<String>,
    pub force_quote: ForceQuote,
}

impl CopyOptions {
    /// Checks the options against each other, as PostgreSQL does before any data moves.
    pub fn finish(&self) -> Result<(), SqlError> {
        let csv_only = [
            (self.quote.is_some(), "quote"),
            (self.escape.is_some(), "escape"),
            (self.force_quote != ForceQuote::None, "force quote"),
        ];
        if self.format == CopyFormat::Text {
            if let Some((_, what)) = csv_only.iter().find(|(set, _)| *set) {
                return Err(SqlError::unsupported(format!(
                    "COPY {what} outside CSV mode"
                )));
            }
        }
        for (value, what) in [
            (&self.delimiter, "delimiter"),
            (&self.quote, "quote"),
            (&self.escape, "escape"),
        ] {
            if value.as_ref().is_some_and(|v| v.len() != 1) {
                return Err(SqlError::unsupported(format!(
                    "COPY {what} that is not a single one-byte character"
                )));
            }
        }
        Ok(())
    }

    fn csv(&self) -> bool {
        self.format == CopyFormat::Csv
    }

    fn delimiter(&self) -> u8 {
        self.delimiter
            .as_ref()
            .map_or(if self.csv() { b',' } else { b'\t' }, |d| d.as_bytes()[0])
    }

    fn null(&self) -> &str {
        self.null
            .as_deref()
            .unwrap_or(if self.csv() { "" } else { "\\N" })
    }

    fn quote(&self) -> u8 {
        self.quote.as_ref().map_or(b'"', |q| q.as_bytes()[0])
    }

    fn escape(&self) -> u8 {
        self.escape
            .as_ref()
            .map_or(self.quote(), |e| e.as_bytes()[0])
    }
}

/// One input row: a field per column, `None` for NULL; borrowed from the reader's buffer where
/// the field needed no unescaping.
pub type Fields<'a> = Vec<Option<Cow<'a, str>>>;

/// Splits a stream of COPY data into rows.
pub struct RowReader {
    options: CopyOptions,
    buffer: Vec<u8>,
    /// Bytes at the buffer's start already read as rows (dropped at the next append or read:
    /// the rows of the last read borrow them until then).
    consumed: usize,
    /// Rows read so far, the header included (for error messages).
    pub line: u64,
    header_pending: bool,
    ended: bool,
}

impl RowReader {
    pub fn new(options: &CopyOptions) -> Self {
        RowReader {
            options: options.clone(),
            buffer: Vec::new(),
            consumed: 0,
            line: 0,
            header_pending: options.header,
            ended: false,
        }
    }

    /// Adds a chunk of data (nothing once the end marker was seen).
    pub fn append(&mut self, data: &[u8]) {
        self.drop_consumed();
        if !self.ended {
            self.buffer.extend_from_slice(data);
        }
    }

    /// Bytes appended but not yet read as rows.
    pub fn buffered(&self) -> usize {
        self.buffer.len() - self.consumed
    }

    fn drop_consumed(&mut self) {
        self.buffer.drain(..std::mem::take(&mut self.consumed));
    }

    /// The complete rows buffered; `at_end`: the data is over, so a last line may lack its
    /// newline.
    /// Each row comes with its line number (the header counted), for error messages.
    pub fn rows(&mut self, at_end: bool) -> Result<Vec<(u64, Fields<'_>)>, SqlError> {
        self.drop_consumed();
        if self.ended {
            return Ok(Vec::new());
        }
        let mut rows = Vec::new();
        let mut start = 0;
        while let Some(end) = record_end(&self.options, &self.buffer[start..], at_end) {
            let end = start + end;
            let record = &self.buffer[start..end];
            start = (end + 1).min(self.buffer.len());
            let record = record.strip_suffix(b"\r").unwrap_or(record);
            if record == b"\\." {
                self.ended = true;
                break;
            }
            self.line += 1;
            if std::mem::take(&mut self.header_pending) {
                continue;
            }
            rows.push((self.line, fields(&self.options, record)?));
        }
        self.consumed = start;
        Ok(rows)
    }
}

/// Where the record at the start of `rest` ends (its newline, or the end of the data).
fn record_end(options: &CopyOptions, rest: &[u8], at_end: bool) -> Option<usize> {
    if rest.is_empty() {
        return None;
    }
    let newline = if options.csv() {
        csv_record_end(rest, options.quote(), options.escape())
    } else {
        rest.iter().position(|b| *b == b'\n')
    };
    match newline {
        Some(i) => Some(i),
        None if at_end => Some(rest.len()),
        None => None,
    }
}

fn fields<'a>(options: &CopyOptions, record: &'a [u8]) -> Result<Fields<'a>, SqlError> {
    let fields = if options.csv() {
        csv_fields(record, options)
            .into_iter()
            .map(|f| f.map(Cow::Owned))
            .collect()
    } else {
        text_fields(record, options.delimiter(), options.null())
    };
    fields
        .into_iter()
        .map(|f| f.map(utf8).transpose())
        .collect()
}

fn utf8(bytes: Cow<'_, [u8]>) -> Result<Cow<'_, str>, SqlError> {
    let invalid = || SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\"");
    Ok(match bytes {
        Cow::Borrowed(bytes) => Cow::Borrowed(std::str::from_utf8(bytes).map_err(|_| invalid())?),
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8(bytes).map_err(|_| invalid())?),
    })
}

/// The offset of the first newline outside quotes.
fn csv_record_end(data: &[u8], quote: u8, escape: u8) -> Option<usize> {
    let mut quoted = false;
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        if quoted && b == escape && escape != quote && data.get(i + 1) == Some(&quote) {
            i += 2;
            continue;
        }
        if b == quote {
            quoted = !quoted;
        } else if b == b'\n' && !quoted {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The fields of a text-format line: split on delimiters that no backslash escapes.
fn text_fields<'a>(line: &'a [u8], delimiter: u8, null: &str) -> Vec<Option<Cow<'a, [u8]>>> {
    let field = |raw: &'a [u8]| (raw != null.as_bytes()).then(|| unescape_text(raw));
    let mut fields = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < line.len() {
        if line[i] == b'\\' {
            i += 2;
            continue;
        }
        if line[i] == delimiter {
            fields.push(field(&line[start..i]));
            start = i + 1;
        }
        i += 1;
    }
    fields.push(field(&line[start..]));
    fields
}

/// Text format's backslash escapes (the field itself when it has none).
fn unescape_text(raw: &[u8]) -> Cow<'_, [u8]> {
    if !raw.contains(&b'\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        i += 1;
        if b != b'\\' || i == raw.len() {
            out.push(b);
            continue;
        }
        let c = raw[i];
        i += 1;
        let simple = match c {
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            _ => None,
        };
        let number = match c {
            b'0'..=b'7' => Some((u32::from(c - b'0'), 8, 2)),
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => Some((0, 16, 2)),
            _ => None,
        };
        match (simple, number) {
            (Some(byte), _) => out.push(byte),
            (None, Some((first, radix, more))) => {
                let mut value = first;
                for _ in 0..more {
                    match raw.get(i).and_then(|d| (*d as char).to_digit(radix)) {
                        Some(digit) => {
                            value = value * radix + digit;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(value as u8);
            }
            (None, None) => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The fields of a CSV record.
fn csv_fields(record: &[u8], options: &CopyOptions) -> Vec<Option<Vec<u8>>> {
    let (delimiter, quote, escape) = (options.delimiter(), options.quote(), options.escape());
    let null = options.null().as_bytes();
    let mut fields = Vec::new();
    let mut field = Vec::new();
    let mut was_quoted = false;
    let mut quoted = false;
    let mut i = 0;
    while i < record.len() {
        let b = record[i];
        i += 1;
        if quoted {
            if b == escape && record.get(i) == Some(&quote) {
                field.push(quote);
                i += 1;
            } else if b == quote {
                quoted = false;
            } else {
                field.push(b);
            }
        } else if b == quote {
            quoted = true;
            was_quoted = true;
        } else if b == delimiter {
            fields.push(csv_field(std::mem::take(&mut field), was_quoted, null));
            was_quoted = false;
        } else {
            field.push(b);
        }
    }
    fields.push(csv_field(field, was_quoted, null));
    fields
}

fn csv_field(field: Vec<u8>, quoted: bool, null: &[u8]) -> Option<Vec<u8>> {
    (quoted || field != null).then_some(field)
}

/// Formats rows for COPY TO.
pub struct RowWriter {
    options: CopyOptions,
    /// Per column: quote it always (FORCE_QUOTE).
    force: Vec<bool>,
}

impl RowWriter {
    pub fn new(options: &CopyOptions, columns: &[String]) -> Self {
        let force = columns
            .iter()
            .map(|c| match &options.force_quote {
                ForceQuote::None => false,
                ForceQuote::All => true,
                ForceQuote::Columns(names) => names.contains(c),
            })
            .collect();
        RowWriter {
            options: options.clone(),
            force,
        }
    }

    /// The header line, if the options ask for one.
    pub fn header(&self, columns: &[String]) -> Option<Vec<u8>> {
        self.options.header.then(|| {
            let names: Vec<Option<String>> = columns.iter().cloned().map(Some).collect();
            let mut out = Vec::new();
            for (i, name) in names.iter().enumerate() {
                self.field(&mut out, i, name.as_deref(), false);
            }
            out.pop();
            out.push(b'\n');
            out
        })
    }

    /// Appends the line of one row to `out`: each value in its text form, formatted and
    /// delimited, ended by a newline. `scratch` is reused for the text of values that are not
    /// strings, so a row costs no allocation once the buffers have grown.
    pub fn write_row(&self, out: &mut Vec<u8>, row: &[Value], scratch: &mut String) {
        for (i, value) in row.iter().enumerate() {
            let text = match value {
                Value::Null => None,
                Value::Text(text) => Some(text.as_str()),
                other => {
                    scratch.clear();
                    let _ = write!(scratch, "{other}");
                    Some(scratch.as_str())
                }
            };
            self.field(out, i, text, self.force[i]);
        }
        out.pop();
        out.push(b'\n');
    }

    /// Appends one field and a delimiter.
    fn field(&self, out: &mut Vec<u8>, index: usize, value: Option<&str>, force: bool) {
        let delimiter = self.options.delimiter();
        match (value, self.options.csv()) {
            (None, _) => out.extend_from_slice(self.options.null().as_bytes()),
            (Some(text), false) => escape_text(out, text.as_bytes(), delimiter),
            (Some(text), true) => self.csv_value(out, text, force || self.force[index]),
        }
        out.push(delimiter);
    }

    fn csv_value(&self, out: &mut Vec<u8>, text: &str, force: bool) {
        let (delimiter, quote, escape) = (
            self.options.delimiter(),
            self.options.quote(),
            self.options.escape(),
        );
        let bytes = text.as_bytes();
        let needs_quotes = force
            || text == self.options.null()
            || text == "\\."
            || bytes
                .iter()
                .any(|b| [delimiter, quote, b'\n', b'\r'].contains(b));
        if !needs_quotes {
            out.extend_from_slice(bytes);
            return;
        }
        out.push(quote);
        for &b in bytes {
            if b == quote || b == escape {
                out.push(escape);
            }
            out.push(b);
        }
        out.push(quote);
    }
}

/// Appends `bytes` with the text format's backslash escapes; runs that need none are copied
/// whole.
fn escape_text(out: &mut Vec<u8>, bytes: &[u8], delimiter: u8) {
    let mut rest = bytes;
    while let Some(at) = first_to_escape(rest, delimiter) {
        out.extend_from_slice(&rest[..at]);
        escape_byte(out, rest[at], delimiter);
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
}

/// The position of the first byte of `bytes` the text format escapes (a control byte, a
/// backslash, the delimiter), eight bytes at a time: a word is passed over when none of its
/// bytes is below 0x20 or equal to either (the zero-byte tests of SWAR, exact for "equal").
fn first_to_escape(bytes: &[u8], delimiter: u8) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS;
    let below_space = |w: u64| w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for word in words.by_ref() {
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let hit = below_space(w)
            | zero_byte(w ^ (ONES * u64::from(b'\\')))
            | zero_byte(w ^ (ONES * u64::from(delimiter)));
        if hit != 0 {
            break;
        }
        offset += 8;
    }
    let needs = |&b: &u8| b < 0x20 || b == b'\\' || b == delimiter;
    bytes[offset..].iter().position(needs).map(|at| offset + at)
}

fn escape_byte(out: &mut Vec<u8>, b: u8, delimiter: u8) {
    let escaped = match b {
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0c => b'f',
        0x0b => b'v',
        b if b == delimiter => b,
        b => {
            out.push(b);
            return;
        }
    };
    out.push(b'\\');
    out.push(escaped);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(format: CopyFormat, header: bool) -> CopyOptions {
        CopyOptions {
            format,
            header,
            ..CopyOptions::default()
        }
    }

    type OwnedFields = Vec<Option<String>>;

    fn read_all(options: &CopyOptions, chunks: &[&[u8]]) -> Vec<OwnedFields> {
        let owned =
            |(_, row): (u64, Fields)| row.into_iter().map(|f| f.map(Cow::into_owned)).collect();
        let mut reader = RowReader::new(options);
        let mut rows: Vec<OwnedFields> = Vec::new();
        for chunk in chunks {
            reader.append(chunk);
            rows.extend(reader.rows(false).unwrap().into_iter().map(owned));
        }
        rows.extend(reader.rows(true).unwrap().into_iter().map(owned));
        rows
    }

    fn row(fields: &[Option<&str>]) -> OwnedFields {
        fields.iter().map(|f| f.map(str::to_owned)).collect()
    }

    #[test]
    fn text_rows_across_chunks_with_escapes_nulls_and_end_marker() {
        let rows = read_all(
            &options(CopyFormat::Text, false),
            &[
                b"1\ta\\tb\t\\N\n2\t",
                b"x\\\\y\t\\101\\\tz\r\n\\.\n3\tignored\n",
            ],
        );
        assert_eq!(
            rows,
            [
                row(&[Some("1"), Some("a\tb"), None]),
                row(&[Some("2"), Some("x\\y"), Some("A\tz")])
            ]
        );
    }

    #[test]
    fn last_line_without_newline_and_header() {
        let rows = read_all(&options(CopyFormat::Text, true), &[b"a\tb\n1\t2"]);
        assert_eq!(rows, [row(&[Some("1"), Some("2")])]);
    }

    #[test]
    fn csv_quotes_nulls_and_multiline_fields() {
        let rows = read_all(
            &options(CopyFormat::Csv, true),
            &[b"id,text\n1,\"a,\"\"b\"\"\",\n2,\"\",\"line\n", b"two\"\n"],
        );
        assert_eq!(
            rows,
            [
                row(&[Some("1"), Some("a,\"b\""), None]),
                row(&[Some("2"), Some(""), Some("line\ntwo")])
            ]
        );
    }

    #[test]
    fn writers_round_trip_through_readers() {
        for format in [CopyFormat::Text, CopyFormat::Csv] {
            let options = options(format, true);
            let columns = ["a".to_owned(), "b".to_owned()];
            let writer = RowWriter::new(&options, &columns);
            let fields = row(&[Some("x\ty,\"z\"\n\\"), None]);
            let values = |fields: &[Option<String>]| -> Vec<Value> {
                let text = |f: &Option<String>| f.clone().map_or(Value::Null, Value::Text);
                fields.iter().map(text).collect()
            };
            let mut data = writer.header(&columns).unwrap();
            let mut scratch = String::new();
            writer.write_row(&mut data, &values(&fields), &mut scratch);
            let tricky = row(&[Some(""), Some("\\.")]);
            writer.write_row(&mut data, &values(&tricky), &mut scratch);
            let rows = read_all(&options, &[&data]);
            assert_eq!(
                rows,
                [fields.clone(), row(&[Some(""), Some("\\.")])],
                "{format:?}"
            );
        }
    }

    #[test]
    fn the_first_byte_to_escape_is_found_in_any_position() {
        let plain = b"abcdefghijklmnopqrstuvwxyz 0123456789~".to_vec();
        assert_eq!(first_to_escape(&plain, b'\t'), None);
        for special in [b'\\', b'\t', b'\n', 0x00, 0x1f, b'|'] {
            for at in 0..plain.len() {
                let mut bytes = plain.clone();
                bytes[at] = special;
                let delimiter = if special == b'|' { b'|' } else { b'\t' };
                assert_eq!(
                    first_to_escape(&bytes, delimiter),
                    Some(at),
                    "{special} at {at}"
                );
            }
        }
        // Bytes above 0x80 (UTF-8) are never escaped.
        assert_eq!(first_to_escape("ünïcödé ünïcödé".as_bytes(), b'\t'), None);
    }

    #[test]
    fn option_checks() {
        let mut text = options(CopyFormat::Text, false);
        text.quote = Some("'".into());
        assert_eq!(text.finish().unwrap_err().code, "0A000");
        let mut csv = options(CopyFormat::Csv, false);
        csv.delimiter = Some("ab".into());
        assert_eq!(csv.finish().unwrap_err().code, "0A000");
    }
}
