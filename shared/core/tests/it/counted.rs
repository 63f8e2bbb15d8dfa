//! The pipeline counts limits while it parses (`api::counted`). Every body gets the answer
//! the count scan and then the plain parse gave (`counts::check`, `serde_json::from_slice`):
//! the same record, or the same refusal, status, pointer, code and message. Checked on real
//! calls, on the shapes each limit was written for, on the fuzzer's seeds, and on each of
//! them spliced with bytes that break it at random places.

use call_ingest_core::api::counted::{self, Counted};
use call_ingest_core::api::counts::{self, Layout, MAX_DEPTH, MAX_KEYS, MAX_SEGMENTS, MAX_VALUES};
use call_ingest_core::api::counts::{MAX_WORDS, MAX_WORDS_PER_SEGMENT};
use call_ingest_core::api::free::Free;
use call_ingest_core::api::reader::Reader;
use call_ingest_core::api::{BodyError, CreateCall, SendCallData};
use call_ingest_core::call::{parse_create_call, parse_send_call_data, Rejection};
use proptest::prelude::*;
use proptest::test_runner::Config;

fn scan_then_parse<T: serde::de::DeserializeOwned>(body: &[u8], layout: Layout) -> Result<T, Rejection> {
    counts::check(body, layout).map_err(Rejection::OverLimit)?;
    serde_json::from_slice(body).map_err(|e| Rejection::Unreadable(BodyError::from_json(&e)))
}

/// The values a counted parse that read `body` whole counted, and the scan's: the same;
/// and a parse stopped past a limit where the scan refuses.
fn same_values<T: serde::de::DeserializeOwned>(body: &[u8], layout: Layout, shown: &dyn Fn() -> String) {
    same_counts(counted::parse::<T>(body, layout), body, layout, shown);
}

fn same_counts<T>(counted: Counted<T>, body: &[u8], layout: Layout, shown: &dyn Fn() -> String) {
    let name = layout.segments;
    match counted {
        Counted::Parsed(_, values) => {
            assert_eq!(Ok(values), counts::check(body, layout), "values counted ({name:?}): {}", shown())
        }
        Counted::Over(_) => assert!(counts::check(body, layout).is_err(), "refused ({name:?}): {}", shown()),
        Counted::Unsure => {}
    }
}

/// The count itself, against the weights the limit documents: a value 1, an array or
/// object 3 more, a member 2 more; a word's own fields count as words, not values.
#[test]
fn values_are_counted_by_their_weights() {
    let counted = |body: &str, layout| match counted::parse::<Free>(body.as_bytes(), layout) {
        Counted::Parsed(_, values) => values,
        other => panic!("{body}: {other:?}"),
    };
    // {} 4, "a" 2, [] 4, 1 and "x" 1 each.
    assert_eq!(counted(r#"{"a":[1,"x"]}"#, Layout::PROVIDER_PAYLOAD), 12);
    // {} 4, a member 2 with its list 4, a segment 4 with a member 2 and its list 4: 20;
    // the word and its fields are words; a repeated field is a member (2) and a value (1).
    let body = r#"{"transcript_with_tool_calls":[{"words":[{"word":"a","start_ms":1,"end_ms":2,"confidence":0.5}]}]}"#;
    assert_eq!(counted(body, Layout::CREATE_CALL), 20);
    let repeated = body.replace(r#""word":"a","#, r#""word":"a","word":"b","#);
    assert_eq!(counted(&repeated, Layout::CREATE_CALL), 23);
}

fn same(body: &[u8]) {
    let shown = || String::from_utf8_lossy(&body[..body.len().min(160)]).into_owned();
    assert!(!counted::plain_words(), "the flag is down outside a parse");
    same_values::<CreateCall>(body, Layout::CREATE_CALL, &shown);
    same_counts(counted::parse_plain_words::<CreateCall>(body, Layout::CREATE_CALL), body, Layout::CREATE_CALL, &shown);
    assert!(!counted::plain_words(), "the flag is down after a parse");
    same_values::<SendCallData>(body, Layout::SEND_CALL_DATA, &shown);
    same_values::<Free>(body, Layout::PROVIDER_PAYLOAD, &shown);
    assert_eq!(parse_create_call(body), scan_then_parse::<CreateCall>(body, Layout::CREATE_CALL), "B: {}", shown());
    assert_eq!(
        parse_send_call_data(body),
        scan_then_parse::<SendCallData>(body, Layout::SEND_CALL_DATA),
        "A: {}",
        shown()
    );
}

fn list(n: usize, each: &str) -> String {
    vec![each; n].join(",")
}

/// Bodies at and past each limit, and real calls of both operations.
fn shapes() -> Vec<Vec<u8>> {
    let word = r#"{"word":"a","start_ms":1,"end_ms":2,"confidence":0.9}"#;
    let odd_word = r#"{"word":1,"start_ms":"x","end_ms":-1,"confidence":null,"word":"b","x":[{}]}"#;
    let words = |n: usize, w: &str| format!(r#"{{"role":"agent","words":[{}]}}"#, list(n, w));
    let segments = |n: usize, s: &str| format!(r#"{{"call_id":"c","transcript_with_tool_calls":[{}]}}"#, list(n, s));
    let keys = |n: usize| format!("{{{}}}", (0..n).map(|i| format!(r#""k/{i}~":0"#)).collect::<Vec<_>>().join(","));
    let deep = |n: usize| format!(r#"{{"metadata":{{"a":{}{}}}}}"#, "[".repeat(n), "]".repeat(n));
    let flat = |n: usize| format!(r#"{{"metadata":{{"a":[{}]}}}}"#, list(n, "0"));
    let long_key = format!(r#"{{"{}":{}{}}}"#, "ké".repeat(50_000), "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    let per = MAX_WORDS_PER_SEGMENT;
    let mut bodies = vec![
        segments(MAX_SEGMENTS, "{}"),
        segments(MAX_SEGMENTS + 1, "{}"),
        segments(MAX_SEGMENTS + 1, "1"),
        segments(1, &words(per, word)),
        segments(1, &words(per + 1, word)),
        segments(MAX_WORDS / per + 1, &words(per, "{}")),
        segments(12, &words(per, odd_word)),
        segments(10, &words(per, r#"{"word":"a","x":1,"y":2,"z":3,"w":4}"#)),
        // A word's own field repeated, holding what it should: 3 values each time.
        segments(2, &words(3, r#"{"word":"a","word":"b"}"#)),
        segments(13, &words(per, r#"{"word":"a","word":"b","word":"c"}"#)),
        segments(2, &words(per, r#"{"start_ms":1,"end_ms":-0,"confidence":-0.0}"#)),
        // Words that are not plain objects, containers where a field's value goes, escaped
        // own keys (and an escaped repeat), nulls, and one nested past the depth limit.
        segments(2, r#"{"words":[1,"a",null,true,[],[[1]],{}]}"#),
        segments(2, &words(3, r#"{"word":{"a":[1]},"start_ms":[1,2,{"b":3}]}"#)),
        segments(2, &words(3, r#"{"word":"a","start_ms":1}"#)),
        segments(2, &words(3, r#"{"word":"a","word":"b"}"#)),
        segments(2, &words(3, r#"{"word":null,"start_ms":null,"end_ms":null,"confidence":null}"#)),
        // Words the reader reads straight from the bytes (`api::plain_word`), and the ones
        // next to them it leaves to the record: whitespace, any order, decimals and
        // integers at the edge of 18 digits, escapes.
        segments(
            2,
            &words(2, " { \"confidence\" :\t0.05 ,\n\"end_ms\":12.50,\"start_ms\" : 0 , \"word\" : \"x y\" } "),
        ),
        segments(
            2,
            &words(2, r#"{"word":"é€𝄞","start_ms":123456789012345678,"end_ms":1.0,"confidence":0.999999999999999999}"#),
        ),
        segments(2, &words(2, r#"{"word":"a","start_ms":1234567890123456789,"end_ms":0.1234567890123456789}"#)),
        segments(2, &words(2, r#"{"word":"a\"b","start_ms":0,"end_ms":1e3,"confidence":00}"#)),
        segments(2, &words(2, r#"{"word":"a\u00e9","start_ms":1.,"end_ms":.5}"#)),
        segments(2, &words(2, r#"{"word":"tab	in","start_ms":1}"#)),
        segments(2, &words(2, r#"{"word":"a","start_ms":1,}"#)),
        segments(2, &words(2, r#"{"word":"a""start_ms":1}"#)),
        segments(2, &words(2, r#"{"word":"a","end_ms":2"#)),
        segments(2, &words(2, r#"{}"#)),
        segments(1, &words(1, &format!(r#"{{"start_ms":{}{}}}"#, "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH)))),
        format!(
            r#"{{"transcript_with_tool_calls":[{}],"metadata":{{"a":[{}]}}}}"#,
            list(3, &words(20, r#"{"word":"a","start_ms":1,"end_ms":2,"confidence":0.5}"#)),
            list(MAX_VALUES, "0")
        ),
        format!(r#"{{"transcript\u005fwith_tool_calls":[{}]}}"#, list(MAX_SEGMENTS + 1, "1")),
        format!(r#"{{"metadata":{}}}"#, keys(MAX_KEYS)),
        format!(r#"{{"metadata":{}}}"#, keys(MAX_KEYS + 1)),
        deep(MAX_DEPTH - 2),
        deep(MAX_DEPTH - 1),
        flat(MAX_VALUES / 2),
        flat(MAX_VALUES),
        long_key,
        format!(r#"{{"agentId":"a","callId":"c","transcript":[{}]}}"#, list(MAX_SEGMENTS + 1, "{}")),
        format!(r#"{{"agentId":"a","callId":"c","transcript":[{}]}}"#, list(3, &words(per + 1, "1"))),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect::<Vec<_>>();
    for seed in 1..4 {
        bodies.push(callgen::create_call_minutes(2.0, seed));
        bodies.push(callgen::send_call_data(&callgen::Options {
            size: callgen::Size::Minutes(2.0),
            seed,
            call_id: None,
        }));
    }
    bodies
}

fn fuzz_seeds() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds");
    let mut seeds: Vec<Vec<u8>> =
        std::fs::read_dir(dir).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
    assert!(seeds.len() >= 10, "the fuzzer's seeds: {dir}");
    seeds.sort();
    seeds
}

/// The shapes and the seeds, built once for every test here.
fn bodies() -> &'static [Vec<u8>] {
    static BODIES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    BODIES.get_or_init(|| shapes().into_iter().chain(fuzz_seeds()).collect())
}

#[test]
fn every_shape_and_seed_is_answered_as_before() {
    for body in bodies() {
        same(body);
    }
}

/// What a splice puts in: bytes that end a string, a container or the text early, or are
/// not UTF-8, not an escape, not a number.
const BREAKS: [&[u8]; 10] = [b"\xff", b"\"", b"]", b"}", b",", b"\\u12", b"-", b"{\"k\":", b"\"\\", b""];

proptest! {
    #![proptest_config(Config { cases: 48, failure_persistence: None, ..Config::default() })]

    /// A body broken somewhere before, at or after the place a limit refuses it: whichever
    /// comes first decides, as it did.
    #[test]
    fn a_broken_body_is_answered_as_before(shape in 0usize..64, at in 0.0f64..1.0, with in 0usize..BREAKS.len(), cut in any::<bool>()) {
        let body = &bodies()[shape % bodies().len()];
        let at = ((body.len() as f64) * at) as usize;
        let mut broken = body[..at].to_vec();
        broken.extend_from_slice(BREAKS[with]);
        if !cut {
            broken.extend_from_slice(&body[at..]);
        }
        same(&broken);
    }
}

/// Where JSON parsers disagree: numbers at the edges of precision and range, escapes,
/// surrogates, control bytes, duplicate keys, a byte-order mark, whitespace. Each in the
/// places a record reads a number, a string or a free-form value.
#[test]
fn the_edges_of_json_are_answered_as_before() {
    let numbers = [
        "0.1000000000000000055511151231257827",
        "2.2250738585072011e-308",
        "2.2250738585072012e-308",
        "4.9e-324",
        "2e-324",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "1e400",
        "-1e400",
        "123456789012345678901234567890",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "9007199254740993",
        "-0",
        "-0.0",
        "0e0",
        "1E+2",
        "1.5e-7",
        "0.30000000000000004",
        "3.141592653589793238462643383279",
        "01",
        "1.",
        ".5",
        "+1",
        "1e",
        "0x10",
        "NaN",
        "Infinity",
    ];
    let strings = [
        r#""\ud800""#,
        r#""\udc00\ud800""#,
        r#""\ud83d\ude00""#,
        r#""\u0000""#,
        r#""\uDEAD""#,
        r#""\u00e9\/\b\f\n\r\t\"\\""#,
        r#""\x41""#,
        r#""\u12""#,
        "\"a\tb\"",
        "\"a\nb\"",
        "\"a\u{7f}b\"",
        "\"é€𝄞\"",
    ];
    let mut bodies: Vec<String> = Vec::new();
    for v in numbers.iter().chain(strings.iter()) {
        bodies.push(format!(r#"{{"call_id":"c","duration_ms":{v},"metadata":{{"k":{v},"l":[{v}]}}}}"#));
        bodies.push(format!(
            r#"{{"call_id":{v},"transcript_with_tool_calls":[{{"role":"agent","words":[{{"word":{v},"start_ms":{v},"end_ms":2,"confidence":{v}}}]}}]}}"#
        ));
        bodies.push(format!(r#"{{"agentId":"a","callId":{v},"latencies":{v},"metadata":{{"x":{v}}}}}"#));
    }
    bodies.extend(
        [
            r#"{"call_id":"a","call_id":"b","metadata":{"k":1,"k":{"j":null}}}"#,
            "\u{feff}{\"call_id\":\"c\"}",
            " \t\r\n{\"call_id\":\"c\"} \t\r\n",
            "{\"call_id\":\"c\"}\u{0}",
            "{\"call_id\":\"c\"}x",
            "{\"call_id\":\"c\",}",
            "{\"call_id\":\"c\"}{}",
            "{\"call_id\" : \"c\" , \"metadata\" : { } }",
            "{\"metadata\":[1,]}",
            "{\"metadata\":{\"\":true,\"a\":false}}",
            "{\"metadata\":tru}",
            "{\"metadata\":nul}",
        ]
        .map(String::from),
    );
    for body in &bodies {
        same(body.as_bytes());
    }
}

/// The plain path is taken: a call of plain words is read whole by it (not judged again by
/// the scan), and a word that is not plain sends the body to the scan.
#[test]
fn plain_words_are_read_whole_and_others_go_to_the_scan() {
    let plain = |body: &[u8]| counted::parse_plain_words::<CreateCall>(body, Layout::CREATE_CALL);
    for seed in 1..4 {
        let body = callgen::create_call_minutes(2.0, seed);
        assert!(matches!(plain(&body), Counted::Parsed(..)), "seed {seed}");
    }
    let words = |w: &str| format!(r#"{{"transcript_with_tool_calls":[{{"words":[{w}]}}]}}"#);
    assert!(matches!(
        plain(words(r#"{"word":"a","start_ms":1,"end_ms":2,"confidence":0.5},{}"#).as_bytes()),
        Counted::Parsed(..)
    ));
    for odd in
        [r#"{"word":"a","x":1}"#, r#"{"word":"a","word":"b"}"#, r#"{"start_ms":-1}"#, r#"{"word":null}"#, "1", "[]"]
    {
        assert!(matches!(plain(words(odd).as_bytes()), Counted::Unsure), "{odd}");
    }
}

/// The limits the README and the OpenAPI document give clients are the ones enforced (the
/// README said 500,000 words in a call while 400,000 were refused past).
#[test]
fn the_documented_limits_are_the_enforced_ones() {
    let with_commas = |n: usize| {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
    for file in ["README.md", "openapi.yaml"] {
        let text = std::fs::read_to_string(format!("{root}{file}")).unwrap();
        let rows = [
            ("segments (", MAX_SEGMENTS),
            ("words in one segment", MAX_WORDS_PER_SEGMENT),
            ("words in one call", MAX_WORDS),
            ("members of one object", MAX_KEYS),
            ("nesting of arrays and objects", MAX_DEPTH),
            ("JSON values, words aside", MAX_VALUES),
        ];
        for (what, limit) in rows {
            let row = text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("| {what}")))
                .unwrap_or_else(|| panic!("{file}: no row for {what}"));
            assert!(row.contains(&format!("| {} |", with_commas(limit))), "{file}: {row} (enforced: {limit})");
        }
    }
}

/// What the counted parse's reader (`api::reader`) reads of `text` is what serde_json reads,
/// value for value and number for number (compared as written back: `-0.0` is not `0`, `1.0`
/// is not `1`); where serde_json refuses, so does the reader. (The reader may refuse more:
/// the body is then judged by serde_json, as `same` checks.)
fn reads_as_serde_json(text: &str) -> bool {
    use serde::Deserialize;
    let ours = {
        let mut reader = Reader::new(text);
        serde_json::Value::deserialize(&mut reader).and_then(|v| reader.end().map(|()| v))
    };
    match (ours, serde_json::from_str::<serde_json::Value>(text)) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{text}");
            true
        }
        (Ok(a), Err(e)) => panic!("the reader read {a} where serde_json refuses ({e}): {text}"),
        (Err(_), _) => false,
    }
}

/// Values a call holds, each read by the reader (refused, the fast path would not be
/// taken), and read as serde_json reads them.
#[test]
fn the_reader_reads_what_serde_json_reads() {
    let read = [
        "0",
        "-0",
        "-0.0",
        "0.0",
        "1",
        "-1",
        "12.50",
        "0.05",
        "-12.5",
        "123456789012345678",
        "-123456789012345678",
        "0.99999999999999999",
        "1.0",
        "true",
        "false",
        "null",
        r#""""#,
        r#""plain""#,
        r#""é€𝄞""#,
        r#""\u00e9\/\b\f\n\r\t\"\\""#,
        r#""\ud83d\ude00""#,
        r#""\u0000""#,
        r#""a\u0041b\\c""#,
        "[]",
        "{}",
        " [ 1 , [ ] , { } , \"a\" ] ",
        "{\"a\":{\"b\":[1,{\"c\":null}]},\"\":0}",
        "{ \"k\" : 1 , \"k\" : 2 }",
        "[0.1,0.2,0.30000000000000004,9007199254740993]",
    ];
    for text in read {
        assert!(reads_as_serde_json(text), "the reader refused {text}");
    }
    for seed in 1..4 {
        let body = String::from_utf8(callgen::create_call_minutes(2.0, seed)).unwrap();
        assert!(reads_as_serde_json(&body), "the reader refused callgen's call, seed {seed}");
    }
}

/// Every shape, seed and edge here, and token soups of JSON's pieces: never a value
/// serde_json does not read, never a different one.
#[test]
fn the_reader_never_reads_otherwise_than_serde_json() {
    for body in bodies() {
        if let Ok(text) = std::str::from_utf8(body) {
            reads_as_serde_json(text);
        }
    }
    let pieces = [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\n",
        r#""a""#,
        r#""\u00e9""#,
        r#""\ud800""#,
        r#""\ud800\u0041""#,
        r#""\udc00""#,
        r#""\q""#,
        "\"\t\"",
        "0",
        "-0",
        "01",
        "1.",
        ".5",
        "1e5",
        "-",
        "0.5",
        "18446744073709551616",
        "1234567890123456789",
        "true",
        "nul",
        "null",
        "-1",
        "2.2250738585072011e-308",
        "\"",
        "\\",
    ];
    let mut rng = 7u64;
    let mut next = |n: usize| {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (rng >> 33) as usize % n
    };
    let mut read = 0;
    for _ in 0..60_000 {
        let len = 1 + next(12);
        let text: String = (0..len).map(|_| pieces[next(pieces.len())]).collect();
        read += usize::from(reads_as_serde_json(&text));
    }
    assert!(read > 1_000, "too few soups were JSON to compare ({read})");
}

/// A typed read of a value of another type is refused, as serde_json refuses it (a
/// visitor that takes both would otherwise be handed what serde_json never hands it).
#[test]
fn the_reader_refuses_a_typed_read_of_another_type() {
    use serde::Deserialize;
    fn refused<T: for<'de> Deserialize<'de> + std::fmt::Debug>(text: &str) {
        assert!(serde_json::from_str::<T>(text).is_err(), "serde_json reads {text}");
        let mut reader = Reader::new(text);
        let ours = T::deserialize(&mut reader);
        assert!(ours.is_err(), "the reader read {text} as {ours:?}");
    }
    refused::<u64>(r#""7""#);
    refused::<String>("7");
    refused::<bool>("1");
    refused::<()>("0");
    refused::<Vec<u64>>("{}");
    refused::<std::collections::BTreeMap<String, u64>>("[]");
    refused::<(u64,)>(r#""x""#);
    // Read by serde_json, left to it here: numeric keys, single precision.
    let mut reader = Reader::new(r#"{"1":2}"#);
    assert!(std::collections::HashMap::<u32, u32>::deserialize(&mut reader).is_err());
    let mut reader = Reader::new("0.1");
    assert!(f32::deserialize(&mut reader).is_err());
    // And the typed reads it takes give what serde_json gives.
    let mut reader = Reader::new(r#"[7, "x", true, null]"#);
    let ours = <(u64, String, bool, ())>::deserialize(&mut reader).unwrap();
    assert_eq!(ours, serde_json::from_str::<(u64, String, bool, ())>(r#"[7, "x", true, null]"#).unwrap());
}
