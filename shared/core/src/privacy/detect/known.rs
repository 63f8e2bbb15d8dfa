//! Values a model found (names, street addresses: `PiiModel`), looked for wherever the call
//! carries them: the model reads the turns' texts, and each value it finds is then replaced
//! in every string of the call (its words, tool arguments, analysis, metadata), token for
//! token, whatever the case or the punctuation around a token.
//!
//! Linear: each token is looked up once by its normalised text, and only the values that
//! start with it (at most [`MAX_PER_START`], each of at most [`MAX_TOKENS`]) are compared.

use std::collections::HashMap;

use super::Span;
use crate::privacy::lexicon::{tokenize, Token};
use crate::privacy::policy::Kind;

/// Longest value kept, in tokens (a street address with its town is a dozen).
const MAX_TOKENS: usize = 12;
/// Most values kept that start with one token.
const MAX_PER_START: usize = 32;

/// The values a model found in a call, by their first token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Known {
    by_first: HashMap<String, Vec<(Vec<String>, Kind)>>,
}

/// Names that are also words a call says for other reasons: taken alone, never replaced
/// (a whole name that holds one still is).
const COMMON: &[&str] = &[
    "will", "may", "mark", "bill", "grace", "hope", "joy", "rose", "april", "june", "faith", "chase", "lane", "dean",
    "art", "sunny", "pat", "sue", "rich", "frank", "guy", "page", "ray", "penny", "the", "and", "dear", "miss", "mrs",
    "mr", "ms", "dr", "sir", "madam", "señor", "señora", "don", "doña", "del", "de", "la", "los", "van", "von",
    "santa", "san", "paz", "luz", "sol", "mar",
];

/// A token as values are compared: lower case, without the punctuation around it or a
/// possessive ("Okafor's" is Okafor).
fn normal(token: &str) -> String {
    let word = token.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    match word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")) {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => word,
    }
}

/// Whether `word` (normalised) may stand alone for a name: three letters or more, and not
/// also a common word ("will", "may").
fn alone(word: &str) -> bool {
    word.chars().count() >= 3 && !COMMON.contains(&word)
}

impl Known {
    /// Adds `text`, a value of `kind`, and the parts of it said alone elsewhere: a street
    /// address without its town (before the first comma), and each word of a name of two or
    /// more ("Ms. Okafor", "thanks Margaret") unless it is also a common word ("Will", "May").
    /// A value of no word, or too long, is left out.
    pub fn add(&mut self, kind: Kind, text: &str) {
        // A name of one word is kept on the same terms as a name's words alone: "Will"
        // found as a name must not replace every "will" the call says.
        let mut tokens = Vec::new();
        tokenize(text, 0, &mut tokens);
        let single = tokens.len() == 1;
        if kind != Kind::PersonName || !single || alone(&normal(tokens[0].text)) {
            self.add_words(kind, text);
        }
        match kind {
            Kind::Address => {
                if let Some((street, _)) = text.split_once(',') {
                    self.add_words(kind, street);
                }
            }
            Kind::PersonName if tokens.len() > 1 => {
                for t in &tokens {
                    if alone(&normal(t.text)) {
                        self.add_words(kind, t.text);
                    }
                }
            }
            _ => {}
        }
    }

    fn add_words(&mut self, kind: Kind, text: &str) {
        let mut tokens = Vec::new();
        tokenize(text, 0, &mut tokens);
        let words: Vec<String> = tokens.iter().map(|t| normal(t.text)).filter(|w| !w.is_empty()).collect();
        if words.is_empty() || words.len() > MAX_TOKENS {
            return;
        }
        let same = self.by_first.entry(words[0].clone()).or_default();
        if same.len() < MAX_PER_START && !same.iter().any(|(w, _)| *w == words) {
            same.push((words, kind));
            // The longest first, so a name is taken whole before its first word alone.
            same.sort_by_key(|(w, _)| std::cmp::Reverse(w.len()));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_first.is_empty()
    }

    /// The known values among `tokens` not `taken` already, in order.
    pub(super) fn find(&self, tokens: &[Token<'_>], taken: &[bool]) -> Vec<Span> {
        let mut spans = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            let found = match taken[i] {
                true => None,
                false => self.by_first.get(&normal(tokens[i].text)).and_then(|values| {
                    values.iter().find(|(words, _)| {
                        let end = i + words.len();
                        end <= tokens.len()
                            && !taken[i..end].iter().any(|t| *t)
                            && words.iter().zip(&tokens[i..end]).all(|(w, t)| *w == normal(t.text))
                    })
                }),
            };
            match found {
                Some((words, kind)) => {
                    spans.push(Span { first: i, last: i + words.len() - 1, kind: *kind });
                    i += words.len();
                }
                None => i += 1,
            }
        }
        spans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(known: &Known, text: &str) -> Vec<(String, Kind)> {
        let mut tokens = Vec::new();
        tokenize(text, 0, &mut tokens);
        let taken = vec![false; tokens.len()];
        known
            .find(&tokens, &taken)
            .into_iter()
            .map(|s| (tokens[s.first..=s.last].iter().map(|t| t.text).collect::<Vec<_>>().join(" "), s.kind))
            .collect()
    }

    #[test]
    fn a_value_is_found_whatever_its_case_and_punctuation_and_the_longest_first() {
        let mut known = Known::default();
        known.add(Kind::PersonName, "Margaret Okafor");
        known.add(Kind::PersonName, "Margaret");
        known.add(Kind::Address, "42 Willow Street, Springfield");
        assert_eq!(
            spans(&known, "this is MARGARET okafor, at 42 willow street springfield. Margaret!"),
            vec![
                ("MARGARET okafor".to_owned(), Kind::PersonName),
                ("42 willow street springfield".to_owned(), Kind::Address),
                ("Margaret".to_owned(), Kind::PersonName),
            ]
        );
        assert_eq!(spans(&known, "Margarets and willow trees"), vec![]);
    }

    #[test]
    fn a_name_is_known_by_each_of_its_words_and_an_address_without_its_town() {
        let mut known = Known::default();
        known.add(Kind::PersonName, "Will Okafor");
        known.add(Kind::Address, "42 Willow Street, Springfield");
        assert_eq!(
            spans(&known, "ms okafor will call from 42 Willow Street"),
            vec![("okafor".to_owned(), Kind::PersonName), ("42 Willow Street".to_owned(), Kind::Address)]
        );
        assert_eq!(spans(&known, "Mrs Okafor's account"), vec![("Okafor's".to_owned(), Kind::PersonName)]);
        let mut single = Known::default();
        single.add(Kind::PersonName, "Will");
        single.add(Kind::PersonName, "Al");
        single.add(Kind::PersonName, "Margaret");
        assert_eq!(
            spans(&single, "I will call Al and Margaret"),
            vec![("Margaret".to_owned(), Kind::PersonName)],
            "a one-word name that is a common or short word stands for nothing"
        );
    }
}
