//! How results reach stdout: text for people by default, or exactly one JSON document
//! (one line) with `--json`, so a script can parse the whole of stdout.

use std::borrow::Cow;
use std::io::{self, Write};

use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Where a command writes its result.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    json: bool,
}

impl Output {
    pub fn new(json: bool) -> Self {
        Output { json }
    }

    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Prints `value` with `--json`, otherwise the text `human` builds (only built when
    /// needed, so commands can format freely).
    pub fn show(&self, value: &Value, human: impl FnOnce() -> String) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        if self.json {
            serde_json::to_writer(&mut stdout, value)?;
            stdout.write_all(b"\n")?;
        } else {
            let text = human();
            let text = escape(&text, Lines::Keep);
            stdout.write_all(text.as_bytes())?;
            if !text.ends_with('\n') {
                stdout.write_all(b"\n")?;
            }
        }
        stdout.flush()
    }

    /// Writes `bytes` to stdout exactly, nothing added.
    pub fn bytes(&self, bytes: &[u8]) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        stdout.write_all(bytes)?;
        stdout.flush()
    }
}

/// Whether the error is stdout's reader having gone away.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// Whether [`escape`] leaves line breaks as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Whole text, laid out by us: line breaks stay.
    Keep,
    /// One value (a field, a cell): a line break in it is escaped too.
    Escape,
}

/// Text for a terminal: control characters (ESC sequences can rewrite the screen, set the
/// clipboard, forge links) and bidirectional overrides (which reorder what is shown) are
/// written as `\u{..}`. Values come from tenants: a call id can hold anything.
pub fn escape(text: &str, lines: Lines) -> Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && !(c == '\n' && lines == Lines::Keep))
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if unsafe_char(c) { format!("\\u{{{:x}}}", u32::from(c)) } else { c.to_string() })
            .collect(),
    )
}

/// `label  value` lines, the labels padded to one width.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    pairs.iter().map(|(k, v)| format!("{k:<width$}  {}\n", escape(v, Lines::Escape))).collect()
}

/// A table with a header line; columns padded to their widest cell.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<Cow<str>>> =
        rows.iter().map(|row| row.iter().map(|cell| escape(cell, Lines::Escape)).collect()).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let padded: Vec<String> = cells.zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(&mut headers.iter().copied());
    for row in &rows {
        out.push_str(&line(&mut row.iter().map(|c| c.as_ref())));
    }
    out
}

/// Epoch seconds as RFC 3339 (UTC); the number itself if it is out of range.
pub fn time_s(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| secs.to_string())
}

/// Epoch milliseconds as RFC 3339 (UTC); the number itself if it is out of range.
pub fn time_ms(ms: u64) -> String {
    call_ingest_core::normalize::timestamps::millis_rfc3339(ms)
}

/// An optional text, `-` when absent or empty (a blank cell reads as a layout error).
pub fn or_dash(value: Option<&str>) -> String {
    match value {
        Some(v) if !v.is_empty() => v.to_owned(),
        _ => "-".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(time_s(1_763_700_000), "2025-11-21T04:40:00Z");
        assert_eq!(time_ms(1_763_700_094_500), "2025-11-21T04:41:34.5Z");
        assert_eq!(time_s(u64::MAX), u64::MAX.to_string());
    }

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        let hostile = "call\u{1b}]52;c;cm0gLXJm\u{7}\u{202e}gpj.exe\nforged";
        assert_eq!(escape(hostile, Lines::Escape), "call\\u{1b}]52;c;cm0gLXJm\\u{7}\\u{202e}gpj.exe\\u{a}forged");
        assert_eq!(escape("a\nb\u{1b}", Lines::Keep), "a\nb\\u{1b}");
        assert!(matches!(escape("plain café", Lines::Escape), Cow::Borrowed(_)));
        let t = table(&["ID"], &[vec!["x\u{1b}[2J".into()]]);
        assert!(!t.contains('\u{1b}'), "{t:?}");
        assert!(!fields(&[("call id", "a\u{1b}[2Jb\nc".into())]).contains(['\u{1b}', '\r']));
    }

    #[test]
    fn tables_align_columns() {
        let t = table(&["ID", "NAME"], &[vec!["1".into(), "Acme".into()], vec!["123".into(), "B".into()]]);
        assert_eq!(t, "ID   NAME\n1    Acme\n123  B\n");
    }
}

/// A command refused before it did anything, for a reason in what it was given (a key file
/// others may read): exit 2, as for a command line clap refuses.
#[derive(Debug)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}
