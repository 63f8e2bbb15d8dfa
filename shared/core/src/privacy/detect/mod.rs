//! The rules that find personal data in a stream of tokens (one string, or the turns of one
//! speaker in order, so a number spoken across two turns is one number): [`emails`]
//! written and spoken, [`ibans`] (mod-97), dates of birth ([`births`]: a date after a
//! birth cue) and the [`numbers`] spoken or written, digit by digit or in pairs, that are
//! card numbers (Luhn), social security numbers or phone numbers.
//!
//! Each pass is linear in the tokens: a value is judged on a bounded number of tokens at
//! each start, a cue looked for in the few tokens around it.

mod births;
mod emails;
mod ibans;
mod known;
mod numbers;

pub use ibans::iban_valid;
pub use known::Known;
pub use numbers::luhn;

use super::lexicon::{lex, Cue, Lex, Token};
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

/// A stream's tokens and what each may mean.
pub(crate) struct Stream<'s, 'a> {
    pub tokens: &'s [Token<'a>],
    pub lexes: Vec<Lex>,
}

impl Stream<'_, '_> {
    fn len(&self) -> usize {
        self.tokens.len()
    }

    fn lex(&self, i: usize) -> Option<Lex> {
        self.lexes.get(i).copied()
    }

    /// A pause after token `i`: punctuation, or a dash or a filler next.
    fn pause_after(&self, i: usize) -> bool {
        self.tokens[i].pause || matches!(self.lex(i + 1), Some(Lex::Dash | Lex::Filler))
    }

    /// The text of token `i`, lower-cased when short (for word lists).
    fn is_word(&self, i: usize, words: &[&str]) -> bool {
        self.tokens.get(i).is_some_and(|t| words.iter().any(|w| w.eq_ignore_ascii_case(t.text)))
    }

    /// Whether one of `words` is in the few tokens before `first`.
    fn said_before(&self, first: usize, words: &[&str]) -> bool {
        (first.saturating_sub(CUE_WINDOW)..first).any(|i| self.is_word(i, words))
    }

    /// The nearest cue in the few tokens before `first` ("order number", "my phone is").
    /// "number" takes the meaning of a cue just before it ("order number", "social
    /// security number"), "code" is a phone's after "area" and a reference's otherwise.
    fn cue_before(&self, first: usize) -> Option<Cue> {
        let from = first.saturating_sub(CUE_WINDOW);
        let (at, cue) = self.lexes[from..first].iter().enumerate().rev().find_map(|(i, l)| match l {
            Lex::Cue(c) => Some((from + i, *c)),
            _ => None,
        })?;
        let before = at.checked_sub(1).and_then(|i| self.lex(i));
        let code = self.is_word(at, &["code"]);
        match (cue, before) {
            (Cue::Phone, Some(Lex::Cue(c @ (Cue::NotPhone | Cue::Ssn)))) if !code => Some(c),
            (Cue::NotPhone, Some(Lex::Cue(Cue::Phone))) if code => Some(Cue::Phone),
            _ => Some(cue),
        }
    }

    /// A cue in the three tokens after `last` ("… is the social").
    fn cue_after(&self, last: usize) -> Option<Cue> {
        (last + 1..self.len().min(last + 4)).find_map(|i| match self.lex(i) {
            Some(Lex::Cue(c)) => Some(c),
            _ => None,
        })
    }
}

/// The values of `kinds` among `tokens`, in order, none overlapping.
pub fn find(tokens: &[Token<'_>], kinds: Kinds) -> Vec<Span> {
    find_with(tokens, kinds, None)
}

/// [`find`], and the values a model found (`known`) wherever they are not taken by a rule.
pub fn find_with(tokens: &[Token<'_>], kinds: Kinds, known: Option<&Known>) -> Vec<Span> {
    let stream = Stream { tokens, lexes: tokens.iter().map(|t| lex(t.text)).collect() };
    let mut taken = vec![false; tokens.len()];
    let mut spans = Vec::new();
    let keep = |spans: &mut Vec<Span>, taken: &mut [bool], span: Span| {
        if kinds.contains(span.kind) && !taken[span.first..=span.last].iter().any(|t| *t) {
            taken[span.first..=span.last].iter_mut().for_each(|t| *t = true);
            spans.push(span);
        }
    };
    for span in emails::find(&stream) {
        keep(&mut spans, &mut taken, span);
    }
    for span in ibans::find(&stream) {
        keep(&mut spans, &mut taken, span);
    }
    for span in births::find(&stream) {
        keep(&mut spans, &mut taken, span);
    }
    for span in numbers::find(&stream, &taken) {
        keep(&mut spans, &mut taken, span);
    }
    if let Some(known) = known.filter(|k| !k.is_empty()) {
        for span in known.find(tokens, &taken) {
            keep(&mut spans, &mut taken, span);
        }
    }
    spans.sort_by_key(|s| s.first);
    spans
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
            "confirmation code 4111111111111111",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
    }

    #[test]
    fn a_card_in_groups_is_one_after_a_reference_too() {
        one("the card on my account is 4111 1111 1111 1111", "4111 1111 1111 1111", Kind::CreditCard);
    }

    #[test]
    fn checks() {
        assert!(luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
        assert!(!luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]));
        assert!(iban_valid(b"GB82WEST12345698765432"));
        assert!(!iban_valid(b"GB83WEST12345698765432"));
    }
}
