//! The rules that find personal data in a stream of tokens (one string, or the turns of one
//! speaker in order, so a number spoken across two turns is one number): e-mail addresses
//! written and spoken, IBANs (mod-97), dates of birth (a date after a birth cue), and the
//! numbers spoken or written, digit by digit or in pairs, that are card numbers (Luhn),
//! social security numbers or phone numbers (NANP rules, `+` and international lengths).
//!
//! Each pass is linear in the tokens: a number is judged on at most 19 digits' worth of
//! tokens at each start, a cue looked for in the few tokens before.

use super::lexicon::{is_tld, Cue, Lex, Token};
use super::policy::{Kind, Kinds};

/// Tokens `first..=last` of the stream are a value of `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub first: usize,
    pub last: usize,
    pub kind: Kind,
}

/// How many tokens before a value its cue may be.
const CUE_WINDOW: usize = 6;
/// How many tokens after a birth cue its date may start.
const BIRTH_WINDOW: usize = 8;
/// Digits of the longest number judged (a card's 19).
const MAX_DIGITS: usize = 19;

/// The values of `kinds` among `tokens`, in order, none overlapping.
pub fn find(tokens: &[Token<'_>], kinds: Kinds) -> Vec<Span> {
    let lexes: Vec<Lex> = tokens.iter().map(|t| super::lexicon::lex(t.text)).collect();
    let mut taken = vec![false; tokens.len()];
    let mut spans = Vec::new();
    let keep = |spans: &mut Vec<Span>, taken: &mut [bool], span: Span| {
        if kinds.contains(span.kind) && !taken[span.first..=span.last].iter().any(|t| *t) {
            taken[span.first..=span.last].iter_mut().for_each(|t| *t = true);
            spans.push(span);
        }
    };
    for span in emails(tokens, &lexes) {
        keep(&mut spans, &mut taken, span);
    }
    for span in ibans(tokens, &lexes) {
        keep(&mut spans, &mut taken, span);
    }
    for span in births(&lexes) {
        keep(&mut spans, &mut taken, span);
    }
    for span in numbers(&lexes, &taken) {
        keep(&mut spans, &mut taken, span);
    }
    spans.sort_by_key(|s| s.first);
    spans
}

/// E-mail addresses: written (`a.b@c.com`), or spoken ("john dot smith at gmail dot com").
fn emails(tokens: &[Token<'_>], lexes: &[Lex]) -> Vec<Span> {
    let mut out = Vec::new();
    let label = |i: usize| matches!(lexes[i], Lex::Word | Lex::Month(_) | Lex::Unit(_) | Lex::Cue(_));
    for i in 0..tokens.len() {
        if lexes[i] == Lex::Email {
            out.push(Span { first: i, last: i, kind: Kind::Email });
            continue;
        }
        if lexes[i] != Lex::At || i == 0 || i + 1 >= tokens.len() {
            continue;
        }
        // The domain: labels joined by "dot" (or written dotted), ending with a known TLD.
        let mut end = None;
        let mut j = i + 1;
        let dotted =
            |t: &str| t.contains('.') && t.split('.').all(|l| !l.is_empty() && l.chars().all(char::is_alphanumeric));
        while j < tokens.len() {
            let text = tokens[j].text;
            if dotted(text) {
                if text.rsplit('.').next().is_some_and(is_tld) {
                    end = Some(j);
                }
            } else if !label(j) {
                break;
            }
            if j + 2 < tokens.len() && lexes[j + 1] == Lex::Dot && (label(j + 2) || dotted(tokens[j + 2].text)) {
                if is_tld(tokens[j + 2].text) {
                    end = Some(j + 2);
                }
                j += 2;
                continue;
            }
            break;
        }
        let Some(end) = end else { continue };
        // The local part: a label, and labels before it joined by dot, underscore or dash.
        if !label(i - 1) {
            continue;
        }
        let mut start = i - 1;
        while start >= 2 && matches!(lexes[start - 1], Lex::Dot | Lex::Underscore | Lex::Dash) && label(start - 2) {
            start -= 2;
        }
        out.push(Span { first: start, last: end, kind: Kind::Email });
    }
    out
}

/// IBANs, written (`GB82 WEST 1234 5698 7654 32`, or in one token) or spelled out ("G B
/// eight two W E S T one two …"): two letters, two check digits, then up to 30 letters
/// and digits; the mod-97 check must hold.
fn ibans(tokens: &[Token<'_>], lexes: &[Lex]) -> Vec<Span> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let mut text: Vec<u8> = Vec::with_capacity(34);
        let mut ends = Vec::new();
        let mut j = i;
        while j < tokens.len() && text.len() < 34 {
            let Some(chars) = iban_chars(tokens[j].text, lexes[j], j == i) else { break };
            if text.len() + chars.len() > 34 {
                break;
            }
            text.extend_from_slice(&chars);
            // A spelled-out start must read as two letters, then two digits.
            let bad_start = text.iter().take(4).enumerate().any(|(k, c)| match k {
                0 | 1 => !c.is_ascii_uppercase(),
                _ => !c.is_ascii_digit(),
            });
            if bad_start {
                break;
            }
            ends.push((j, text.len()));
            j += 1;
        }
        match ends.iter().rev().find(|(_, len)| *len >= 15 && iban_valid(&text[..*len])) {
            Some(&(last, _)) => {
                out.push(Span { first: i, last, kind: Kind::Iban });
                i = last + 1;
            }
            None => i += 1,
        }
    }
    out
}

/// The characters a token adds to an IBAN: a group of up to four letters and digits (the
/// first may be the whole IBAN), a spelled letter, or a spoken digit.
fn iban_chars(text: &str, lex: Lex, first: bool) -> Option<Vec<u8>> {
    if let Lex::Unit(d) = lex {
        if text.len() > 1 {
            return Some(vec![b'0' + d]);
        }
    }
    let bytes = text.as_bytes();
    let max = if first { 34 } else { 4 };
    let alnum = !bytes.is_empty() && bytes.len() <= max && bytes.iter().all(u8::is_ascii_alphanumeric);
    // Lower-case letters only as one spelled letter ("g b …"), not as words.
    let letters_ok = bytes.len() == 1 || bytes.iter().all(|b| !b.is_ascii_lowercase());
    (alnum && letters_ok).then(|| bytes.to_ascii_uppercase())
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

/// Dates after a birth cue ("born", "date of birth", "DOB"): written (`03/14/1985`), or by
/// month name with a day and a year, written or spoken ("March fourteenth nineteen eighty
/// five", "14 March 1985").
fn births(lexes: &[Lex]) -> Vec<Span> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lexes.len() {
        if lexes[i] != Lex::Cue(Cue::Birth) {
            i += 1;
            continue;
        }
        let window = (i + 1)..lexes.len().min(i + 1 + BIRTH_WINDOW);
        let found = window.clone().find_map(|j| date_at(lexes, j).map(|end| (j, end)));
        match found {
            Some((start, end)) => {
                out.push(Span { first: start, last: end, kind: Kind::DateOfBirth });
                i = end + 1;
            }
            None => i += 1,
        }
    }
    out
}

/// The last token of a date starting at `i`, if one does.
fn date_at(lexes: &[Lex], i: usize) -> Option<usize> {
    match lexes[i] {
        Lex::Date { year } if (1900..=2030).contains(&year) => Some(i),
        Lex::Month(_) => {
            let day_end = day_at(lexes, i + 1)?;
            year_at(lexes, skip_filler(lexes, day_end + 1))
        }
        _ => {
            let day_end = day_at(lexes, i)?;
            let mut j = day_end + 1;
            if j < lexes.len() && matches!(lexes[j], Lex::Word | Lex::Other) {
                j += 1; // "of"
            }
            match lexes.get(j) {
                Some(Lex::Month(_)) => year_at(lexes, skip_filler(lexes, j + 1)),
                _ => None,
            }
        }
    }
}

fn skip_filler(lexes: &[Lex], i: usize) -> usize {
    match lexes.get(i) {
        Some(Lex::Filler) => i + 1,
        _ => i,
    }
}

/// The last token of a day of the month at `i` ("14", "14th", "fourteenth", "twenty
/// first", "twenty one").
fn day_at(lexes: &[Lex], i: usize) -> Option<usize> {
    match *lexes.get(i)? {
        Lex::Ordinal(_) | Lex::Teen(_) => Some(i),
        Lex::Unit(d) if d > 0 => Some(i),
        Lex::Digits { count: 1..=2, grouped: 0, plus: false, .. } => Some(i),
        Lex::Ten(2 | 3) => match lexes.get(i + 1) {
            Some(Lex::Ordinal(1..=9) | Lex::Unit(1..=9)) => Some(i + 1),
            _ => Some(i),
        },
        _ => None,
    }
}

/// The last token of a year at `i`: written (`1985`), or spoken ("nineteen eighty five",
/// "nineteen oh five", "two thousand and three", "twenty twelve").
fn year_at(lexes: &[Lex], i: usize) -> Option<usize> {
    match *lexes.get(i)? {
        Lex::Digits { digits, count: 4, grouped: 0, plus: false, .. } => {
            let year = digits[..4].iter().fold(0u32, |y, d| y * 10 + u32::from(*d));
            (1900..=2030).contains(&year).then_some(i)
        }
        Lex::Teen(19) | Lex::Ten(2) => match *lexes.get(i + 1)? {
            Lex::Teen(_) => Some(i + 1),
            Lex::Ten(_) => match lexes.get(i + 2) {
                Some(Lex::Unit(1..=9)) => Some(i + 2),
                _ => Some(i + 1),
            },
            Lex::Unit(0) => match lexes.get(i + 2) {
                Some(Lex::Unit(1..=9)) => Some(i + 2),
                _ => None,
            },
            _ => None,
        },
        Lex::Unit(2) if lexes.get(i + 1) == Some(&Lex::Thousand) => {
            let j = skip_filler(lexes, i + 2);
            match lexes.get(j) {
                Some(Lex::Unit(1..=9) | Lex::Teen(_)) => Some(j),
                Some(Lex::Ten(_)) => match lexes.get(j + 1) {
                    Some(Lex::Unit(1..=9)) => Some(j + 1),
                    _ => Some(j),
                },
                _ => Some(i + 1),
            }
        }
        _ => None,
    }
}

/// A piece of a number: its digits and its tokens.
#[derive(Debug, Clone, Copy)]
struct Piece {
    first: usize,
    last: usize,
    digits: [u8; MAX_DIGITS],
    count: usize,
}

impl Piece {
    fn new(first: usize, last: usize, digits: &[u8]) -> Piece {
        let mut d = [0u8; MAX_DIGITS];
        let count = digits.len().min(MAX_DIGITS);
        d[..count].copy_from_slice(&digits[..count]);
        Piece { first, last, digits: d, count: digits.len() }
    }
}

/// Card, social security and phone numbers: runs of written digits and spoken number words
/// (with "double", "triple", "hundred", fillers and dashes between), judged on the longest
/// sub-run that is one.
fn numbers(lexes: &[Lex], taken: &[bool]) -> Vec<Span> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lexes.len() {
        if taken[i] || !lexes[i].in_number() {
            i += 1;
            continue;
        }
        let mut end = i;
        while end + 1 < lexes.len() && !taken[end + 1] && lexes[end + 1].in_number() {
            end += 1;
        }
        let pieces = pieces(lexes, i, end);
        judge(lexes, &pieces, &mut out);
        i = end + 1;
    }
    out
}

/// The digits of tokens `from..=to`, a piece per number word or written token.
fn pieces(lexes: &[Lex], from: usize, to: usize) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut i = from;
    while i <= to {
        match lexes[i] {
            Lex::Digits { digits, count, .. } => {
                let n = usize::from(count).min(MAX_DIGITS);
                let mut p = Piece::new(i, i, &digits[..n]);
                p.count = usize::from(count);
                out.push(p);
            }
            Lex::Unit(d) => match lexes.get(i + 1) {
                Some(Lex::Hundred) if i < to => {
                    // "eight hundred" is 800; "five hundred twelve" is 512.
                    let rest = match (lexes.get(i + 2), lexes.get(i + 3)) {
                        (Some(Lex::Teen(t)), _) if i + 2 <= to => Some((i + 2, [t / 10, t % 10])),
                        (Some(Lex::Ten(t)), Some(Lex::Unit(u @ 1..=9))) if i + 3 <= to => Some((i + 3, [*t, *u])),
                        (Some(Lex::Ten(t)), _) if i + 2 <= to => Some((i + 2, [*t, 0])),
                        _ => None,
                    };
                    match rest {
                        Some((last, [a, b])) => {
                            out.push(Piece::new(i, last, &[d, a, b]));
                            i = last;
                        }
                        None => {
                            out.push(Piece::new(i, i + 1, &[d, 0, 0]));
                            i += 1;
                        }
                    }
                }
                _ => out.push(Piece::new(i, i, &[d])),
            },
            Lex::Teen(t) => out.push(Piece::new(i, i, &[t / 10, t % 10])),
            Lex::Ten(t) => match lexes.get(i + 1) {
                Some(Lex::Unit(u @ 1..=9)) if i < to => {
                    out.push(Piece::new(i, i + 1, &[t, *u]));
                    i += 1;
                }
                _ => out.push(Piece::new(i, i, &[t, 0])),
            },
            Lex::Repeat(n) => {
                if let (Some(Lex::Unit(d)), true) = (lexes.get(i + 1), i < to) {
                    let digits = vec![*d; usize::from(n)];
                    out.push(Piece::new(i, i + 1, &digits));
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Emits the values among `pieces`: from each start, the longest run of pieces (at most
/// [`MAX_DIGITS`] digits) that is a card, a social security or a phone number.
fn judge(lexes: &[Lex], pieces: &[Piece], out: &mut Vec<Span>) {
    let mut i = 0;
    while i < pieces.len() {
        let mut digits = Vec::with_capacity(MAX_DIGITS);
        let mut ends = Vec::new();
        for (j, p) in pieces.iter().enumerate().skip(i) {
            if digits.len() + p.count > MAX_DIGITS {
                break;
            }
            digits.extend_from_slice(&p.digits[..p.count]);
            ends.push((j, digits.len()));
        }
        let found = ends
            .iter()
            .rev()
            .find_map(|&(j, len)| kind_of(lexes, &pieces[i..=j], &digits[..len]).map(|kind| (j, kind)));
        match found {
            Some((j, kind)) => {
                out.push(Span { first: pieces[i].first, last: pieces[j].last, kind });
                i = j + 1;
            }
            None => i += 1,
        }
    }
}

/// What the digits of `pieces` are, if personal data.
fn kind_of(lexes: &[Lex], pieces: &[Piece], digits: &[u8]) -> Option<Kind> {
    let first = pieces[0].first;
    let cue = cue_before(lexes, first);
    let n = digits.len();
    if cue == Some(Cue::NotPhone) {
        return None;
    }
    if (13..=19).contains(&n) && luhn(digits) && !digits.iter().all(|d| *d == digits[0]) {
        return Some(Kind::CreditCard);
    }
    if n == 9 && ssn_shape(lexes, pieces, cue) && ssn_valid(digits) {
        return Some(Kind::Ssn);
    }
    let plus = matches!(lexes[first], Lex::Digits { plus: true, .. }) || (first > 0 && lexes[first - 1] == Lex::Plus);
    let nanp = |d: &[u8]| d[0] >= 2 && d[3] >= 2 && !(d[1] == 1 && d[2] == 1);
    let phone = match n {
        _ if plus => (8..=15).contains(&n),
        10 => nanp(digits),
        11 if digits[0] == 1 => nanp(&digits[1..]),
        11 if digits[0] == 0 => cue == Some(Cue::Phone),
        7 => cue == Some(Cue::Phone) && digits[0] >= 2,
        _ => false,
    };
    phone.then_some(Kind::PhoneNumber)
}

/// A social security number's shape: written `123-45-6789`, or any nine digits after a
/// cue ("social security number is …").
fn ssn_shape(lexes: &[Lex], pieces: &[Piece], cue: Option<Cue>) -> bool {
    let written = matches!(pieces, [p] if matches!(lexes[p.first], Lex::Digits { groups: [3, 2, 4], grouped: 3, .. }));
    let grouped = matches!(pieces, [a, b, c] if a.count == 3 && b.count == 2 && c.count == 4)
        && pieces.iter().all(|p| matches!(lexes[p.first], Lex::Digits { .. }));
    written || grouped || cue == Some(Cue::Ssn)
}

fn ssn_valid(d: &[u8]) -> bool {
    let area = u32::from(d[0]) * 100 + u32::from(d[1]) * 10 + u32::from(d[2]);
    area != 0 && area != 666 && area < 900 && (d[3], d[4]) != (0, 0) && d[5..9].iter().any(|x| *x != 0)
}

/// The nearest cue in the few tokens before `first` ("order number", "my phone is"). A
/// reference ("order", "confirmation", "account") is a number that is no one's personal
/// data: neither a card, nor a social security number, nor a phone.
/// "number" says phone unless a reference or "social security" comes just before it
/// ("order number").
fn cue_before(lexes: &[Lex], first: usize) -> Option<Cue> {
    let from = first.saturating_sub(CUE_WINDOW);
    let (at, cue) = lexes[from..first].iter().enumerate().rev().find_map(|(i, l)| match l {
        Lex::Cue(c) => Some((from + i, *c)),
        _ => None,
    })?;
    let before = at.checked_sub(1).map(|i| lexes[i]);
    match (cue, before) {
        (Cue::Phone, Some(Lex::Cue(c @ (Cue::NotPhone | Cue::Ssn)))) => Some(c),
        _ => Some(cue),
    }
}

/// The Luhn check of a card number.
pub fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            match i % 2 {
                1 if d * 2 > 9 => d * 2 - 9,
                1 => d * 2,
                _ => d,
            }
        })
        .sum();
    sum % 10 == 0
}

#[cfg(test)]
mod tests {
    use super::super::lexicon::tokenize;
    use super::*;

    fn found(text: &str) -> Vec<(String, Kind)> {
        let mut tokens = Vec::new();
        tokenize(text, 0, &mut tokens);
        find(&tokens, Kinds::all())
            .into_iter()
            .map(|s| (text[tokens[s.first].start..tokens[s.last].end].to_owned(), s.kind))
            .collect()
    }

    fn one(text: &str, value: &str, kind: Kind) {
        assert_eq!(found(text), [(value.to_owned(), kind)], "{text}");
    }

    #[test]
    fn written_values_are_found() {
        one("my number is (212) 555-0147 thanks", "(212) 555-0147", Kind::PhoneNumber);
        one("call +44 20 7946 0958 today", "+44 20 7946 0958", Kind::PhoneNumber);
        one("card 4111 1111 1111 1111 expires soon", "4111 1111 1111 1111", Kind::CreditCard);
        one("ssn 123-45-6789.", "123-45-6789", Kind::Ssn);
        one("mail jane.doe+x@example.co.uk now", "jane.doe+x@example.co.uk", Kind::Email);
        one("IBAN GB82 WEST 1234 5698 7654 32 please", "GB82 WEST 1234 5698 7654 32", Kind::Iban);
        one("DOB: 03/14/1985", "03/14/1985", Kind::DateOfBirth);
    }

    #[test]
    fn spoken_forms() {
        one(
            "reach me at two one two five five five oh one four seven",
            "two one two five five five oh one four seven",
            Kind::PhoneNumber,
        );
        one(
            "it is two one two, double five five, oh one four seven",
            "two one two, double five five, oh one four seven",
            Kind::PhoneNumber,
        );
        one("john dot smith at gmail dot com", "john dot smith at gmail dot com", Kind::Email);
        one(
            "I was born on March fourteenth nineteen eighty five",
            "March fourteenth nineteen eighty five",
            Kind::DateOfBirth,
        );
        one("date of birth is the 14th of June 1985", "14th of June 1985", Kind::DateOfBirth);
        one(
            "my social is one two three four five six seven eight nine",
            "one two three four five six seven eight nine",
            Kind::Ssn,
        );
    }

    #[test]
    fn look_alikes_are_left() {
        for text in [
            "your order number is 2125550147",
            "it costs $12.99 or 1299 cents",
            "see you at 3:45 on March 14, 2025",
            "we opened in 1985 and moved in 2003",
            "that is twelve ninety nine plus tax",
            "room 4111 on floor 11",
            "the meeting is at ten thirty",
            "confirmation code 4111 1111 1111 1111",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
    }

    #[test]
    fn checks() {
        assert!(luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
        assert!(!luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]));
        assert!(iban_valid(b"GB82WEST12345698765432"));
        assert!(!iban_valid(b"GB83WEST12345698765432"));
    }
}
