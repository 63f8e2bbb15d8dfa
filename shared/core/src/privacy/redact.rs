//! Replacing personal data in a call, in place: every string it carries. The turns of each
//! speaker are read as one stream (text, and apart from it the timed words), so a number
//! spoken across turns is found whole; a redacted word keeps its timing and gives a
//! `redactions` entry, so the recording can be bleeped later. Every other string (tool
//! arguments and results, variables, analysis, metadata, unknown fields) is read alone.
//!
//! Linear in the call's size: each string is tokenized once, each token judged once.

use serde_json::Value;

use super::detect::{find_with, Known, Span};
use super::lexicon::{tokenize, Token};
use super::policy::{Kind, Kinds, Redaction};
use crate::api::create_call::Segment;
use crate::api::{CreateCall, Number};
use crate::normalize::transcript;

/// A replacement in one string: bytes `start..end` of piece `piece` become `kind`'s
/// placeholder.
#[derive(Debug, Clone, Copy)]
struct Edit {
    piece: usize,
    start: usize,
    end: usize,
    kind: Kind,
}

/// The edits `spans` of `tokens` make: one per piece a span touches.
fn edits(tokens: &[Token<'_>], spans: &[Span]) -> Vec<Edit> {
    let mut out = Vec::new();
    for span in spans {
        let mut i = span.first;
        while i <= span.last {
            let piece = tokens[i].piece;
            let mut j = i;
            while j < span.last && tokens[j + 1].piece == piece {
                j += 1;
            }
            out.push(Edit { piece, start: tokens[i].start, end: tokens[j].end, kind: span.kind });
            i = j + 1;
        }
    }
    out
}

/// `text` with `edits` (of this piece, in order) applied.
fn rewrite(text: &str, edits: &[Edit]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for e in edits {
        out.push_str(&text[at..e.start]);
        out.push_str(e.kind.placeholder());
        at = e.end;
    }
    out.push_str(&text[at..]);
    out
}

/// What a redaction replaces: the values of `kinds` the rules find, and those a model found
/// (`known`) wherever the call carries them.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    pub kinds: Kinds,
    pub known: Option<&'a Known>,
}

impl Rules<'_> {
    /// The rules alone.
    pub fn of(kinds: Kinds) -> Rules<'static> {
        Rules { kinds, known: None }
    }
}

/// `text` with its values of `kinds` replaced, or `None` when it has none.
pub fn redact_text(text: &str, kinds: Kinds) -> Option<String> {
    redact_text_with(text, Rules::of(kinds))
}

/// [`redact_text`] under `rules`.
pub fn redact_text_with(text: &str, rules: Rules<'_>) -> Option<String> {
    let mut tokens = Vec::new();
    tokenize(text, 0, &mut tokens);
    let spans = find_with(&tokens, rules.kinds, rules.known);
    if spans.is_empty() {
        return None;
    }
    Some(rewrite(text, &edits(&tokens, &spans)))
}

/// Redacts every string in `value` (object keys are names, and kept).
fn redact_value(value: &mut Value, rules: Rules<'_>) {
    match value {
        Value::String(s) => {
            if let Some(r) = redact_text_with(s, rules) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, rules)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(v, rules)),
        _ => {}
    }
}

fn redact_object(map: &mut serde_json::Map<String, Value>, rules: Rules<'_>) {
    map.values_mut().for_each(|v| redact_value(v, rules));
}

fn redact_string(s: &mut Option<String>, rules: Rules<'_>) {
    if let Some(r) = s.as_deref().and_then(|t| redact_text_with(t, rules)) {
        *s = Some(r);
    }
}

/// Replaces the values of `kinds` in every string of `call`; answers where the audio said
/// them, in order of time.
pub fn redact_call(call: &mut CreateCall, kinds: Kinds) -> Vec<Redaction> {
    redact_call_with(call, Rules::of(kinds))
}

/// [`redact_call`] under `rules`.
pub fn redact_call_with(call: &mut CreateCall, rules: Rules<'_>) -> Vec<Redaction> {
    let mut redactions = Vec::new();
    // A transcript derived from the turns is derived again from the redacted turns (a
    // number spoken across a caller's turns is whole there only); one the client sent is
    // read as it is.
    let derived = call.transcript_with_tool_calls.as_deref().map(transcript::derive);
    let was_derived = derived.is_some() && call.transcript == derived;
    if let Some(segments) = call.transcript_with_tool_calls.as_mut() {
        redact_segments(segments, rules, &mut redactions);
    }
    if was_derived {
        call.transcript = call.transcript_with_tool_calls.as_deref().map(transcript::derive);
    }
    for s in [&mut call.transcript, &mut call.recording_url, &mut call.recording_multi_channel_url] {
        redact_string(s, rules);
    }
    if rules.kinds.contains(Kind::PhoneNumber) {
        if let Some(phone) = call.caller_phone_number.as_mut().filter(|p| !p.trim().is_empty()) {
            *phone = Kind::PhoneNumber.placeholder().to_owned();
        }
    }
    for object in [
        &mut call.collected_dynamic_variables,
        &mut call.call_analysis,
        &mut call.metadata,
        &mut call.general_meta_data_raw,
    ]
    .into_iter()
    .flatten()
    {
        redact_object(object, rules);
    }
    redact_object(&mut call.extra, rules);
    redactions.sort_by_key(|r| (r.start_ms, r.end_ms));
    redactions
}

/// The turns' texts and words, a stream per speaker, then each segment's other strings.
fn redact_segments(segments: &mut [Segment], rules: Rules<'_>, redactions: &mut Vec<Redaction>) {
    // The segments of each speaker, in order, found in one pass (a body may name thousands
    // of roles: each segment is looked at once per pass, never once per role).
    let mut by_role: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (i, s) in segments.iter().enumerate() {
        by_role.entry(s.role.as_deref().unwrap_or_default()).or_default().push(i);
    }
    let mut streams: Vec<Vec<usize>> = by_role.into_values().collect();
    streams.sort_unstable();
    for indices in &streams {
        // Texts: a piece per segment.
        let text_edits = {
            let mut tokens = Vec::new();
            for &i in indices {
                tokenize(segments[i].text.as_deref().unwrap_or_default(), i, &mut tokens);
            }
            edits(&tokens, &find_with(&tokens, rules.kinds, rules.known))
        };
        for group in text_edits.chunk_by(|a, b| a.piece == b.piece) {
            let segment = &mut segments[group[0].piece];
            if let Some(text) = segment.text.as_mut() {
                *text = rewrite(text, group);
            }
            if segment.words.as_ref().is_none_or(Vec::is_empty) {
                // No words to time it by: the segment's own span.
                if let (Some(start), Some(end)) = (millis(segment.start_ms), millis(segment.end_ms)) {
                    redactions.extend(group.iter().map(|e| Redaction { start_ms: start, end_ms: end, kind: e.kind }));
                }
            }
        }
        // Words: a piece per word.
        let (word_spans, places) = {
            let mut tokens = Vec::new();
            let mut places = Vec::new();
            for &i in indices {
                for (j, w) in segments[i].words.iter().flatten().enumerate() {
                    tokenize(w.word.as_deref().unwrap_or_default(), places.len(), &mut tokens);
                    places.push((i, j));
                }
            }
            let spans = find_with(&tokens, rules.kinds, rules.known);
            let pieces: Vec<(usize, usize, Kind)> =
                spans.iter().map(|s| (tokens[s.first].piece, tokens[s.last].piece, s.kind)).collect();
            (pieces, places)
        };
        for (first, last, kind) in word_spans {
            let mut open: Option<(usize, Redaction)> = None;
            for &(seg, w) in &places[first..=last] {
                let Some(word) = segments[seg].words.as_mut().and_then(|ws| ws.get_mut(w)) else { continue };
                word.word = Some(kind.placeholder().into());
                let (Some(start), Some(end)) = (millis(word.start_ms), millis(word.end_ms)) else { continue };
                match open.as_mut() {
                    Some((s, r)) if *s == seg => r.end_ms = r.end_ms.max(end),
                    _ => {
                        if let Some((_, r)) = open.replace((seg, Redaction { start_ms: start, end_ms: end, kind })) {
                            redactions.push(r);
                        }
                    }
                }
            }
            if let Some((_, r)) = open {
                redactions.push(r);
            }
        }
    }
    for s in segments.iter_mut() {
        if let Some(tool) = s.tool.as_mut() {
            for v in [&mut tool.params, &mut tool.result].into_iter().flatten() {
                redact_value(v, rules);
            }
            redact_string(&mut tool.error, rules);
            redact_object(&mut tool.extra, rules);
        }
        if let Some(node) = s.node.as_mut() {
            redact_string(&mut node.reason, rules);
            redact_object(&mut node.extra, rules);
        }
        if let Some(m) = s.metadata.as_mut() {
            redact_object(&mut m.extra, rules);
        }
        redact_object(&mut s.extra, rules);
    }
}

fn millis(n: Option<Number>) -> Option<u64> {
    n.and_then(Number::ceil_non_negative).and_then(|ms| u64::try_from(ms).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::create_call::Word;

    fn word(w: &str, start: i64) -> Word {
        Word {
            word: Some(w.into()),
            start_ms: Some(Number::Int(start)),
            end_ms: Some(Number::Int(start + 300)),
            ..Word::default()
        }
    }

    fn segment(role: &str, text: &str, start: i64) -> Segment {
        let words = text.split(' ').enumerate().map(|(i, w)| word(w, start + 400 * i as i64)).collect();
        Segment {
            role: Some(role.into()),
            text: Some(text.into()),
            words: Some(words),
            start_ms: Some(Number::Int(start)),
            ..Segment::default()
        }
    }

    #[test]
    fn a_number_spoken_across_turns_is_redacted_in_text_and_words_with_its_timing() {
        let mut call = CreateCall {
            transcript_with_tool_calls: Some(vec![
                segment("user", "my number is five five five", 0),
                segment("agent", "go on", 2000),
                segment("user", "two one two oh one four seven", 3000),
            ]),
            caller_phone_number: Some("+12125550147".into()),
            ..CreateCall::default()
        };
        let redactions = redact_call(&mut call, Kinds::all());
        let segs = call.transcript_with_tool_calls.as_ref().unwrap();
        assert_eq!(segs[0].text.as_deref(), Some("my number is [PHONE_NUMBER]"));
        assert_eq!(segs[1].text.as_deref(), Some("go on"));
        assert_eq!(segs[2].text.as_deref(), Some("[PHONE_NUMBER]"));
        let words: Vec<&str> = segs[0].words.as_ref().unwrap().iter().map(|w| w.word.as_deref().unwrap()).collect();
        assert_eq!(words, ["my", "number", "is", "[PHONE_NUMBER]", "[PHONE_NUMBER]", "[PHONE_NUMBER]"]);
        assert_eq!(segs[0].words.as_ref().unwrap()[3].start_ms, Some(Number::Int(1200)), "timings stay");
        assert_eq!(
            redactions,
            [
                Redaction { start_ms: 1200, end_ms: 2300, kind: Kind::PhoneNumber },
                Redaction { start_ms: 3000, end_ms: 5700, kind: Kind::PhoneNumber },
            ]
        );
        assert_eq!(call.caller_phone_number.as_deref(), Some("[PHONE_NUMBER]"));
    }

    #[test]
    fn free_form_values_are_redacted_and_only_the_kinds_asked_for() {
        let mut value = serde_json::json!({"to": ["a@b.com", {"card": "4111 1111 1111 1111"}], "n": 5});
        redact_value(&mut value, Rules::of(Kinds::of([Kind::Email])));
        assert_eq!(value, serde_json::json!({"to": ["[EMAIL]", {"card": "4111 1111 1111 1111"}], "n": 5}));
        assert_eq!(redact_text("[EMAIL] and [CREDIT_CARD]", Kinds::all()), None, "placeholders are not found again");
    }
}
