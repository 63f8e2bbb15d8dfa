//! A workspace's model of personal data besides the rules (`PiiModel`): AWS Comprehend's
//! `DetectPiiEntities` reads the call's turns and finds names and street addresses, which
//! rules cannot; each value it finds is then replaced wherever the call carries it
//! (`privacy::Known`). Off unless the workspace's policy names it.
//!
//! Never in the way of storing the call: the model gets [`WITHIN`] in all; if it fails, is
//! throttled or is late, or the call's text is longer than [`MAX_REQUESTS`] requests take,
//! the call is stored with the rules' redaction alone and says so
//! (`redaction.model: "unavailable"`), never refused.

use std::borrow::Cow;
use std::time::Duration;

use aws_sdk_comprehend::types::{LanguageCode, PiiEntityType};
use futures_util::future::try_join_all;

use call_ingest_core::api::create_call::Segment;
use call_ingest_core::api::CreateCall;
use call_ingest_core::call::CallDocument;
use call_ingest_core::privacy::{Kind, Kinds, Known, Language, ModelFound};

use crate::Backend;

/// The model's time, all its requests at once.
pub const WITHIN: Duration = Duration::from_secs(1);
/// Comprehend's limit on one request's text: 100 KB of UTF-8.
pub const MAX_TEXT_BYTES: usize = 100_000;
/// Requests one call may take (800 KB of turns: about six hours of conversation).
pub const MAX_REQUESTS: usize = 8;
/// Entities below this confidence are left to the rules.
const MIN_SCORE: f32 = 0.5;

/// What the model finds of `kinds` (its own: names, addresses) in the turns of `doc`, a
/// call of `workspace_id`, all within [`WITHIN`]. Not read (`Unavailable`): no client; the
/// turns take more than [`MAX_REQUESTS`]; the call's head holds this very content already
/// (a replay: it will store nothing, and is not billed again); the workspace's budget of
/// model requests this second is spent (Comprehend's quota is the account's); the model
/// fails, throttles or is late.
pub async fn find(
    backend: &Backend,
    workspace_id: u64,
    doc: &CallDocument,
    language: Language,
    kinds: Kinds,
) -> ModelFound {
    let Some(client) = backend.comprehend() else { return ModelFound::Unavailable };
    let texts = chunks(&doc.call);
    if texts.is_empty() {
        return ModelFound::NothingToRead;
    }
    if texts.len() > MAX_REQUESTS {
        tracing::warn!(requests = texts.len(), "the call's turns are too long for the model; rules alone");
        return ModelFound::Unavailable;
    }
    let language = match language {
        Language::En => LanguageCode::En,
        Language::Es => LanguageCode::Es,
    };
    let asked = async {
        if let Some(identity) = &doc.identity {
            match backend.store().holds_digest(workspace_id, doc.call_id(), identity).await {
                Ok(true) => return Err("a replay of the content the call holds"),
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "could not tell a replay; the model reads it"),
            }
        }
        let requests = u32::try_from(texts.len()).unwrap_or(u32::MAX);
        match backend.directory().take_model(workspace_id, requests, backend.config.model_rate_limit).await {
            Ok(true) => {}
            Ok(false) => return Err("the workspace's model requests this second are spent"),
            Err(_) => return Err("the model's budget could not be counted"),
        }
        let requests = texts.iter().map(|text| {
            let request = client.detect_pii_entities().text(text.clone()).language_code(language.clone()).send();
            async move { request.await.map(|out| (text, out)) }
        });
        try_join_all(requests).await.map_err(|e| {
            tracing::warn!(error = %aws_sdk_comprehend::error::DisplayErrorContext(&e), "the model failed");
            "the model failed"
        })
    };
    let answers = match tokio::time::timeout(WITHIN, asked).await {
        Ok(Ok(answers)) => answers,
        Ok(Err(why)) => {
            tracing::info!(workspace_id, "{why}; rules alone");
            return ModelFound::Unavailable;
        }
        Err(_) => {
            tracing::warn!("the model took over {WITHIN:?}; rules alone");
            return ModelFound::Unavailable;
        }
    };
    let mut known = Known::default();
    for (text, out) in answers {
        // Where each character starts, once per request (an entity's offsets count them).
        let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len())).collect();
        for entity in out.entities() {
            let kind = match entity.r#type() {
                Some(PiiEntityType::Name) => Kind::PersonName,
                Some(PiiEntityType::Address) => Kind::Address,
                _ => continue,
            };
            if !kinds.contains(kind) || entity.score().unwrap_or(0.0) < MIN_SCORE {
                continue;
            }
            let (Some(begin), Some(end)) = (entity.begin_offset(), entity.end_offset()) else { continue };
            if let Some(value) = chars(text, &starts, begin, end) {
                known.add(kind, value);
            }
        }
    }
    ModelFound::Values(known)
}

/// Characters `begin..end` of `text` (Comprehend's offsets count characters), if within
/// it; `starts`: the byte where each character of `text` starts, and its length last.
fn chars<'a>(text: &'a str, starts: &[usize], begin: i32, end: i32) -> Option<&'a str> {
    let (begin, end) = (usize::try_from(begin).ok()?, usize::try_from(end).ok()?);
    if begin >= end {
        return None;
    }
    text.get(*starts.get(begin)?..*starts.get(end)?)
}

/// The text of one turn: its `text`, else its timed words, a space between.
fn turn_text(segment: &Segment) -> Cow<'_, str> {
    match segment.text.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(text) => Cow::Borrowed(text),
        None => {
            let words = segment.words.iter().flatten().filter_map(|w| w.word.as_deref());
            Cow::Owned(words.filter(|w| !w.trim().is_empty()).collect::<Vec<_>>().join(" "))
        }
    }
}

/// The turns' texts (or words), a line each, in requests of at most [`MAX_TEXT_BYTES`]: a
/// turn that does not fit where a request stands starts the next (so a name is not cut
/// between two), and a turn longer than a request is cut at a character boundary.
fn chunks(call: &CreateCall) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for turn in call.transcript_with_tool_calls.iter().flatten().map(turn_text) {
        if turn.trim().is_empty() {
            continue;
        }
        let mut rest: &str = &turn;
        while !rest.is_empty() {
            let room = MAX_TEXT_BYTES.saturating_sub(current.len() + 1);
            if room == 0 || (rest.len() > room && !current.is_empty()) {
                out.push(std::mem::take(&mut current));
                continue;
            }
            let mut cut = rest.len().min(room);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(&rest[..cut]);
            rest = &rest[cut..];
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_of(texts: &[&str]) -> CreateCall {
        let segments: Vec<serde_json::Value> =
            texts.iter().map(|t| serde_json::json!({"role": "user", "text": t})).collect();
        serde_json::from_value(serde_json::json!({"call_id": "c", "transcript_with_tool_calls": segments})).unwrap()
    }

    #[test]
    fn turns_go_in_requests_of_at_most_100_kb_cut_at_characters() {
        let long = "é".repeat(70_000); // 140,000 bytes
        let chunks = chunks(&call_of(&["hello", &long, "bye"]));
        assert!(
            chunks.iter().all(|c| c.len() <= MAX_TEXT_BYTES),
            "{:?}",
            chunks.iter().map(String::len).collect::<Vec<_>>()
        );
        assert_eq!(chunks.concat().replace('\n', ""), format!("hello{long}bye"));
        // A turn that does not fit where the request stands starts one of its own.
        assert_eq!(chunks.iter().map(String::len).collect::<Vec<_>>(), vec![5, 99_998, 40_006]);
        assert!(super::chunks(&call_of(&[" ", ""])).is_empty());
    }

    #[test]
    fn a_turn_of_words_alone_is_read_from_its_words() {
        let call: CreateCall = serde_json::from_value(serde_json::json!({"call_id": "c", "transcript_with_tool_calls": [
            {"role": "user", "words": [{"word": "I'm", "start_ms": 0, "end_ms": 1}, {"word": "Ana"}, {"word": " "}, {"word": "Núñez"}]},
            {"role": "agent", "text": "  ", "words": [{"word": "hello"}]},
            {"role": "user", "text": "the text wins", "words": [{"word": "other"}]},
            {"role": "tool", "words": []},
        ]}))
        .unwrap();
        assert_eq!(chunks(&call), vec!["I'm Ana Núñez\nhello\nthe text wins".to_owned()]);
    }

    #[test]
    fn offsets_count_characters() {
        let text = "Señora Ana Núñez called";
        let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len())).collect();
        assert_eq!(chars(text, &starts, 7, 16), Some("Ana Núñez"));
        assert_eq!(chars(text, &starts, 7, 99), None);
        assert_eq!(chars(text, &starts, 3, 3), None);
        assert_eq!(chars(text, &starts, 17, 23), Some("called"));
    }
}
