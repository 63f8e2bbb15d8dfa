//! IBANs: a country's two letters, two check digits, then up to 30 letters and digits,
//! written (`GB82 WEST 1234 5698 7654 32`, `DE89-3704-…`, in one token) or spelled out ("g b
//! eight two, west, one two three four", "sixty sixteen, thirteen thirty one"). The mod-97
//! check must hold, and the country must be one that issues IBANs.

use super::{Span, Stream};
use crate::privacy::lexicon::Lex;
use crate::privacy::policy::Kind;

/// The countries whose accounts have IBANs (the SWIFT registry's).
const COUNTRIES: [&str; 89] = [
    "AD", "AE", "AL", "AT", "AZ", "BA", "BE", "BG", "BH", "BI", "BR", "BY", "CH", "CR", "CY", "CZ", "DE", "DJ", "DK",
    "DO", "EE", "EG", "ES", "FI", "FK", "FO", "FR", "GB", "GE", "GI", "GL", "GR", "GT", "HN", "HR", "HU", "IE", "IL",
    "IQ", "IS", "IT", "JO", "KW", "KZ", "LB", "LC", "LI", "LT", "LU", "LV", "LY", "MC", "MD", "ME", "MK", "MN", "MR",
    "MT", "MU", "NI", "NL", "NO", "OM", "PK", "PL", "PS", "PT", "QA", "RO", "RS", "RU", "SA", "SC", "SD", "SE", "SI",
    "SK", "SM", "SO", "ST", "SV", "TL", "TN", "TR", "UA", "VA", "VG", "XK", "YE",
];
const MAX_LEN: usize = 34;
const MIN_LEN: usize = 15;

pub(super) fn find(stream: &Stream<'_, '_>) -> Vec<Span> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < stream.len() {
        let mut text: Vec<u8> = Vec::with_capacity(MAX_LEN);
        let mut ends = Vec::new();
        let mut j = i;
        while j < stream.len() && text.len() < MAX_LEN {
            let Some(chars) = chars_of(stream, j, text.len()) else { break };
            if text.len() + chars.len() > MAX_LEN {
                break;
            }
            text.extend_from_slice(&chars);
            // It must start as two letters of a country, then two digits.
            let bad_start = text.iter().take(4).enumerate().any(|(k, c)| match k {
                0 | 1 => !c.is_ascii_uppercase(),
                _ => !c.is_ascii_digit(),
            }) || (text.len() >= 2
                && !COUNTRIES.contains(&std::str::from_utf8(&text[..2]).unwrap_or_default()));
            if bad_start {
                break;
            }
            ends.push((j, text.len()));
            j += 1;
        }
        match ends.iter().rev().find(|(_, len)| *len >= MIN_LEN && iban_valid(&text[..*len])) {
            Some(&(last, _)) => {
                out.push(Span { first: i, last, kind: Kind::Iban });
                i = last + 1;
            }
            None => i += 1,
        }
    }
    out
}

/// The characters token `i` adds to an IBAN of `so_far` characters: a group of letters and
/// digits (the first may be the whole IBAN, with dashes), a spelled letter, or a number said
/// ("sixty" is 60, "thirty" before "one" is 3, "double oh" 00, "hundred" 00).
fn chars_of(stream: &Stream<'_, '_>, i: usize, so_far: usize) -> Option<Vec<u8>> {
    let said = |d: u8| Some(vec![b'0' + d]);
    match stream.lexes[i] {
        Lex::Unit(d) if stream.tokens[i].text.len() > 1 => {
            // The digit a "double" or "triple" before it said twice or thrice.
            let times = match i.checked_sub(1).map(|k| stream.lexes[k]) {
                Some(Lex::Repeat(n)) => usize::from(n),
                _ => 1,
            };
            return Some(vec![b'0' + d; times]);
        }
        Lex::Teen(t) => return Some(vec![b'0' + t / 10, b'0' + t % 10]),
        Lex::Ten(t) => {
            return match stream.lex(i + 1) {
                Some(Lex::Unit(1..=9)) if !stream.tokens[i].pause => said(t),
                _ => Some(vec![b'0' + t, b'0']),
            }
        }
        Lex::Hundred if so_far > 0 => return Some(b"00".to_vec()),
        Lex::Repeat(_) if so_far > 0 => return Some(Vec::new()),
        _ => {}
    }
    let text: Vec<u8> = stream.tokens[i].text.bytes().filter(|b| *b != b'-').collect();
    let max = if so_far == 0 { MAX_LEN } else { 4 };
    let alnum = !text.is_empty() && text.len() <= max && text.iter().all(u8::is_ascii_alphanumeric);
    // A lower-case word only once the country and check digits are in ("west" of a bank
    // code), or as the country itself just after "IBAN" ("iban es 98 …": "is", "it" and
    // "de" are words too); else spelled letters.
    let lower = text.iter().any(u8::is_ascii_lowercase);
    let lower_ok = !lower
        || text.len() == 1
        || so_far >= 4
        || (so_far == 0 && text.len() >= MIN_LEN)
        || (so_far == 0 && text.len() == 2 && stream.said_before(i, &["iban", "iban:"]));
    (alnum && lower_ok).then(|| text.to_ascii_uppercase())
}

/// The IBAN check: the first four characters moved to the end, letters as 10–35, the
/// number mod 97 is 1.
pub fn iban_valid(iban: &[u8]) -> bool {
    let mut rem: u32 = 0;
    for &c in iban[4..].iter().chain(&iban[..4]) {
        let v = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 { (rem * 100 + v) % 97 } else { (rem * 10 + v) % 97 };
    }
    rem == 1
}
