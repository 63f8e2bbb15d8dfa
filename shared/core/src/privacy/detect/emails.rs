//! E-mail addresses: written (`a.b@c.com`), or spoken: a local part of a few words, letters
//! and numbers ("john dot smith", "m a r i a underscore gonzalez", "big dave fifty five"),
//! "at", then a domain of words joined by "dot" or "dash" ending with a known top-level
//! domain, said or spelled ("peterson plumbing dot com", "libero dot i t").

use super::{Span, Stream};
use crate::privacy::lexicon::{is_tld, Lex};
use crate::privacy::policy::Kind;

/// Most words of a local part said one after another, and of a domain's label.
const MAX_LOCAL_WORDS: usize = 6;
const MAX_LABEL_WORDS: usize = 3;

/// Words that introduce an address and are never part of one.
const NOT_LOCAL: [&str; 28] = [
    "is", "it's", "its", "my", "me", "email", "e-mail", "address", "to", "at", "the", "uh", "um", "yeah", "so", "and",
    "it", "send", "you", "your", "was", "that's", "or", "reach", "write", "spell", "is:", "mail",
];

pub(super) fn find(stream: &Stream<'_, '_>) -> Vec<Span> {
    let mut out = Vec::new();
    for i in 0..stream.len() {
        match stream.lexes[i] {
            Lex::Email => out.push(Span { first: i, last: i, kind: Kind::Email }),
            Lex::At if i > 0 => {
                if let (Some(first), Some(last)) = (local_start(stream, i), domain_end(stream, i + 1)) {
                    out.push(Span { first, last, kind: Kind::Email });
                }
            }
            _ => {}
        }
    }
    out
}

/// A word that can be part of an address: letters, digits, and `-` `.` `_` `+` inside.
fn is_label(stream: &Stream<'_, '_>, i: usize) -> bool {
    let Some(token) = stream.tokens.get(i) else { return false };
    let connector = matches!(stream.lexes[i], Lex::At | Lex::Dot | Lex::Underscore | Lex::Dash | Lex::Plus);
    !connector
        && token.text.chars().any(char::is_alphanumeric)
        && token.text.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '.' | '_' | '+'))
}

/// The first token of the local part before the "at" at `at`.
fn local_start(stream: &Stream<'_, '_>, at: usize) -> Option<usize> {
    let local = |i: usize| is_label(stream, i) && !stream.is_word(i, &NOT_LOCAL);
    let mut start = at - 1;
    if !local(start) {
        return None;
    }
    let mut words = 1;
    while start > 0 && words < MAX_LOCAL_WORDS {
        let before = start - 1;
        let joined = matches!(stream.lexes[before], Lex::Dot | Lex::Underscore | Lex::Dash | Lex::Plus);
        if joined && before > 0 && local(before - 1) {
            start = before - 1;
        } else if !joined && local(before) && !stream.tokens[before].pause {
            start = before;
        } else {
            break;
        }
        words += 1;
    }
    Some(start)
}

/// The last token of a domain starting at `from`: its last top-level domain.
fn domain_end(stream: &Stream<'_, '_>, from: usize) -> Option<usize> {
    let single_letter = |i: usize| {
        stream.tokens.get(i).is_some_and(|t| t.text.len() == 1 && t.text.as_bytes()[0].is_ascii_alphabetic())
    };
    let mut end = None;
    let mut words = 0;
    let mut j = from;
    while j < stream.len() {
        if is_label(stream, j) {
            let text = stream.tokens[j].text;
            if text.contains('.') && text.rsplit('.').next().is_some_and(is_tld) {
                end = Some(j);
            }
            words += 1;
            if words > MAX_LABEL_WORDS || stream.tokens[j].pause && end.is_none() {
                break;
            }
            j += 1;
            continue;
        }
        match stream.lexes[j] {
            Lex::Dot if j > from => {
                // A top-level domain said ("com") or spelled ("i t").
                let letters = (j + 1..stream.len().min(j + 4)).take_while(|&k| single_letter(k)).count();
                let spelled: String = (j + 1..j + 1 + letters).map(|k| stream.tokens[k].text).collect();
                if letters >= 2 && is_tld(&spelled) {
                    end = Some(j + letters);
                } else if is_label(stream, j + 1) && is_tld(stream.tokens[j + 1].text) {
                    end = Some(j + 1);
                }
                words = 0;
                j += 1;
            }
            Lex::Dash if j > from => {
                words = 0;
                j += 1;
            }
            _ => break,
        }
        if end.is_some_and(|e| stream.tokens[e].pause) {
            break;
        }
    }
    end
}
