//! Card, social security and phone numbers: runs of written digits and spoken number words
//! ("five five five", "fifty five", "double five", "eight hundred", fillers and dashes
//! between), judged on the longest sub-run that is one.

use super::{Span, Stream};
use crate::privacy::lexicon::{Cue, Lex};
use crate::privacy::policy::Kind;

/// Digits of the longest number judged (a card's 19).
pub(super) const MAX_DIGITS: usize = 19;

/// A piece of a number: its digits, its tokens, and whether a pause follows it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Piece {
    pub first: usize,
    pub last: usize,
    pub digits: [u8; MAX_DIGITS],
    pub count: usize,
    pub pause: bool,
}

impl Piece {
    fn new(first: usize, last: usize, digits: &[u8]) -> Piece {
        let mut d = [0u8; MAX_DIGITS];
        let count = digits.len().min(MAX_DIGITS);
        d[..count].copy_from_slice(&digits[..count]);
        Piece { first, last, digits: d, count: digits.len(), pause: false }
    }

    /// Its value, when it has at most four digits.
    pub fn value(&self) -> Option<u32> {
        (self.count <= 4).then(|| self.digits[..self.count].iter().fold(0, |v, d| v * 10 + u32::from(*d)))
    }
}

pub(super) fn find(stream: &Stream<'_, '_>, taken: &[bool]) -> Vec<Span> {
    let mut out = Vec::new();
    let lexes = &stream.lexes;
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
        judge(stream, &pieces(stream, i, end), &mut out);
        i = end + 1;
    }
    out
}

/// The last token of the run of number tokens that starts at `i`.
pub(super) fn run_end(stream: &Stream<'_, '_>, i: usize) -> usize {
    let mut end = i;
    while stream.lex(end + 1).is_some_and(Lex::in_number) {
        end += 1;
    }
    end
}

/// The digits of tokens `from..=to`, a piece per number word or written token.
pub(super) fn pieces(stream: &Stream<'_, '_>, from: usize, to: usize) -> Vec<Piece> {
    let lexes = &stream.lexes;
    let mut out: Vec<Piece> = Vec::new();
    let mut i = from;
    while i <= to {
        let piece = match lexes[i] {
            Lex::Digits { digits, count, .. } => {
                let n = usize::from(count).min(MAX_DIGITS);
                let mut p = Piece::new(i, i, &digits[..n]);
                p.count = usize::from(count);
                Some(p)
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
                        Some((last, [a, b])) => Some(Piece::new(i, last, &[d, a, b])),
                        None => Some(Piece::new(i, i + 1, &[d, 0, 0])),
                    }
                }
                _ => Some(Piece::new(i, i, &[d])),
            },
            Lex::Teen(t) => Some(Piece::new(i, i, &[t / 10, t % 10])),
            Lex::Ten(t) => match lexes.get(i + 1) {
                Some(Lex::Unit(u @ 1..=9)) if i < to && !stream.pause_after(i) => Some(Piece::new(i, i + 1, &[t, *u])),
                _ => Some(Piece::new(i, i, &[t, 0])),
            },
            // "seventy seven hundred" is 7700.
            Lex::Hundred if !out.is_empty() => Some(Piece::new(i, i, &[0, 0])),
            Lex::Repeat(n) => match lexes.get(i + 1) {
                Some(Lex::Unit(d)) if i < to => Some(Piece::new(i, i + 1, &vec![*d; usize::from(n)])),
                _ => None,
            },
            _ => None,
        };
        if let Some(mut piece) = piece {
            piece.pause = stream.pause_after(piece.last);
            i = piece.last;
            out.push(piece);
        } else if let Some(last) = out.last_mut() {
            // A dash or a filler: a pause after the piece before it.
            last.pause = true;
        }
        i += 1;
    }
    out
}

/// Emits the values among `pieces`: from each start, the longest run of pieces (at most
/// [`MAX_DIGITS`] digits) that is a card, a social security or a phone number.
fn judge(stream: &Stream<'_, '_>, pieces: &[Piece], out: &mut Vec<Span>) {
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
            .find_map(|&(j, len)| kind_of(stream, &pieces[i..=j], &digits[..len]).map(|kind| (j, kind)));
        match found {
            Some((j, kind)) => {
                // A "plus" said before an international number is part of it.
                let first = pieces[i].first;
                let first = match first.checked_sub(1).and_then(|k| stream.lex(k)) {
                    Some(Lex::Plus) if kind == Kind::PhoneNumber => first - 1,
                    _ => first,
                };
                out.push(Span { first, last: pieces[j].last, kind });
                i = j + 1;
            }
            None => i += 1,
        }
    }
}

/// What the digits of `pieces` are, if personal data.
fn kind_of(stream: &Stream<'_, '_>, pieces: &[Piece], digits: &[u8]) -> Option<Kind> {
    let lexes = &stream.lexes;
    let first = pieces[0].first;
    let last = pieces[pieces.len() - 1].last;
    let cue = stream.cue_before(first);
    let n = digits.len();
    // After a reference ("order", "account", "policy"), a number is a card only when said
    // or written in groups, as cards are ("the card on my account is 4111 1111 …"); a
    // reference's single run of digits is not one, whatever Luhn says.
    let reference = cue == Some(Cue::NotPhone);
    let card = (13..=19).contains(&n) && luhn(digits) && !digits.iter().all(|d| *d == digits[0]);
    if card && (!reference || pieces.len() >= 3) {
        return Some(Kind::CreditCard);
    }
    if reference {
        return None;
    }
    if n == 9
        && ssn_valid(digits)
        && (ssn_shape(lexes, pieces) || [cue, stream.cue_after(last)].contains(&Some(Cue::Ssn)))
    {
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

/// A social security number's shape: three groups of 3, 2 and 4 digits, written
/// (`123-45-6789`, `123 45 6789`) or spoken with pauses between them ("one two three,
/// four five, six seven eight nine").
fn ssn_shape(lexes: &[Lex], pieces: &[Piece]) -> bool {
    if let [p] = pieces {
        return matches!(lexes[p.first], Lex::Digits { groups: [3, 2, 4], grouped: 3, .. });
    }
    let written = pieces.iter().all(|p| matches!(lexes[p.first], Lex::Digits { .. }));
    if written && matches!(pieces, [a, b, c] if (a.count, b.count, c.count) == (3, 2, 4)) {
        return true;
    }
    let mut groups = Vec::with_capacity(3);
    let mut count = 0;
    for (k, p) in pieces.iter().enumerate() {
        count += p.count;
        if p.pause || k + 1 == pieces.len() {
            groups.push(count);
            count = 0;
        }
    }
    groups == [3, 2, 4]
}

fn ssn_valid(d: &[u8]) -> bool {
    let area = u32::from(d[0]) * 100 + u32::from(d[1]) * 10 + u32::from(d[2]);
    area != 0 && area != 666 && area < 900 && (d[3], d[4]) != (0, 0) && d[5..9].iter().any(|x| *x != 0)
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
