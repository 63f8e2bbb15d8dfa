//! Dates of birth: a date in the few tokens after a birth cue ("born", "date of birth",
//! "DOB", "birthday"). Written (`03/14/1985`, `12-Apr-1979`, `8 14 1977`), by month name
//! ("March 14, 1985", "the 14th of June 1985", "june the sixth, nineteen forty nine"), or
//! in numbers spoken ("twelve seventeen nineteen eighty", "oh four, twelve, seventy nine").
//! A date with no such cue is left: an appointment is no one's personal data.

use super::numbers::{pieces, run_end, Piece};
use super::{Span, Stream};
use crate::privacy::lexicon::{two_digit_year, Cue, Lex};
use crate::privacy::policy::Kind;

/// How many tokens after a birth cue its date may start.
const BIRTH_WINDOW: usize = 8;

pub(super) fn find(stream: &Stream<'_, '_>) -> Vec<Span> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < stream.len() {
        if stream.lex(i) != Some(Lex::Cue(Cue::Birth)) {
            i += 1;
            continue;
        }
        let window = (i + 1)..stream.len().min(i + 1 + BIRTH_WINDOW);
        let found = window.clone().find_map(|j| date_at(stream, j).map(|end| (j, end)));
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
fn date_at(stream: &Stream<'_, '_>, i: usize) -> Option<usize> {
    match stream.lex(i)? {
        Lex::Date { year } if (1900..=2030).contains(&year) => Some(i),
        Lex::Month(_) => {
            // "june the sixth"
            let at = if stream.is_word(i + 1, &["the"]) { i + 2 } else { i + 1 };
            let day_end = day_at(stream, at)?;
            year_at(stream, skip_filler(stream, day_end + 1))
        }
        _ => {
            let by_name = day_at(stream, i).and_then(|day_end| {
                let mut j = day_end + 1;
                if stream.is_word(j, &["of", "the"]) {
                    j += 1;
                }
                match stream.lex(j) {
                    Some(Lex::Month(_)) => year_at(stream, skip_filler(stream, j + 1)),
                    _ => None,
                }
            });
            by_name.or_else(|| numeric_date(stream, i))
        }
    }
}

fn skip_filler(stream: &Stream<'_, '_>, i: usize) -> usize {
    match stream.lex(i) {
        Some(Lex::Filler) => i + 1,
        _ => i,
    }
}

/// The last token of a day of the month at `i` ("14", "14th", "fourteenth", "twenty
/// first", "twenty one").
fn day_at(stream: &Stream<'_, '_>, i: usize) -> Option<usize> {
    match stream.lex(i)? {
        Lex::Ordinal(_) | Lex::Teen(_) => Some(i),
        Lex::Unit(d) if d > 0 => Some(i),
        Lex::Digits { count: 1..=2, grouped: 0, plus: false, .. } => Some(i),
        Lex::Ten(2 | 3) => match stream.lex(i + 1) {
            Some(Lex::Ordinal(1..=9) | Lex::Unit(1..=9)) => Some(i + 1),
            _ => Some(i),
        },
        _ => None,
    }
}

/// The last token of a year at `i`: written (`1985`, `85`), or spoken ("nineteen eighty
/// five", "nineteen oh five", "two thousand and three", "twenty twelve", "eighty two").
fn year_at(stream: &Stream<'_, '_>, i: usize) -> Option<usize> {
    match stream.lex(i)? {
        Lex::Digits { digits, count: 4, grouped: 0, plus: false, .. } => {
            let year = digits[..4].iter().fold(0u32, |y, d| y * 10 + u32::from(*d));
            (1900..=2030).contains(&year).then_some(i)
        }
        Lex::Digits { count: 2, grouped: 0, plus: false, .. } => Some(i),
        Lex::Teen(19) | Lex::Ten(2) if matches!(stream.lex(i + 1), Some(Lex::Teen(_) | Lex::Ten(_) | Lex::Unit(0))) => {
            match stream.lex(i + 1)? {
                Lex::Teen(_) => Some(i + 1),
                Lex::Ten(_) => match stream.lex(i + 2) {
                    Some(Lex::Unit(1..=9)) => Some(i + 2),
                    _ => Some(i + 1),
                },
                _ => match stream.lex(i + 2) {
                    Some(Lex::Unit(1..=9)) => Some(i + 2),
                    _ => None,
                },
            }
        }
        // Two digits spoken: "eighty two".
        Lex::Ten(_) => match stream.lex(i + 1) {
            Some(Lex::Unit(1..=9)) => Some(i + 1),
            _ => Some(i),
        },
        Lex::Unit(2) if stream.lex(i + 1) == Some(Lex::Thousand) => {
            let j = skip_filler(stream, i + 2);
            match stream.lex(j) {
                Some(Lex::Unit(1..=9) | Lex::Teen(_)) => Some(j),
                Some(Lex::Ten(_)) => match stream.lex(j + 1) {
                    Some(Lex::Unit(1..=9)) => Some(j + 1),
                    _ => Some(j),
                },
                _ => Some(i + 1),
            }
        }
        _ => None,
    }
}

/// A date in numbers, month and day either way round, then a year of two or four digits:
/// "twelve seventeen nineteen eighty", "oh four, twelve, seventy nine", "8 14 1977".
fn numeric_date(stream: &Stream<'_, '_>, i: usize) -> Option<usize> {
    if !stream.lex(i)?.in_number() {
        return None;
    }
    let end = run_end(stream, i).min(i + 8);
    let parts = numbers_of(&pieces(stream, i, end));
    let [(a, _), (b, _), rest @ ..] = parts.as_slice() else { return None };
    let day_month = |x: u32, y: u32| (1..=12).contains(&x) && (1..=31).contains(&y);
    if !(day_month(*a, *b) || day_month(*b, *a)) {
        return None;
    }
    match rest {
        // "nineteen eighty": a year in two pairs.
        [(19 | 20, _), (y, last), ..] if *y < 100 => Some(*last),
        [(y, last), ..] if *y < 100 || (1900..=2030).contains(y) => {
            let year = u16::try_from(*y).ok()?;
            (year >= 100 || two_digit_year(year) <= 2030).then_some(*last)
        }
        _ => None,
    }
}

/// The numbers a run of pieces says, each with its last token: "oh four" is 4 (a zero
/// before a digit is its first digit).
fn numbers_of(pieces: &[Piece]) -> Vec<(u32, usize)> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < pieces.len() {
        let p = &pieces[k];
        match (p.value(), pieces.get(k + 1)) {
            (Some(0), Some(next)) if p.count == 1 && next.count == 1 => {
                out.push((u32::from(next.digits[0]), next.last));
                k += 2;
            }
            (Some(v), _) => {
                out.push((v, p.last));
                k += 1;
            }
            (None, _) => break,
        }
    }
    out
}
