//! Validation: every rule of the specification and the contract, each violation reported
//! with a JSON pointer, a code and a message, all at once.
//!
//! Three passes over the parsed record, none of which stops at the first problem:
//! wrong JSON types noted while parsing ([`crate::api::lenient`]), the garde rules on the
//! record types (limits, required fields, allowed values: [`rules`], [`messages`]), and
//! the rules that span fields ([`checks`]).

pub mod checks;

use std::collections::HashSet;

use garde::Validate;

use crate::api::lenient::WrongTypes;
use crate::api::messages;
use crate::api::pointer::{self, Pointer};
use crate::api::send_call_data::{SimpleMetadata, TranscriptItem};
use crate::api::{Code, CreateCall, SendCallData, Violation};

/// Every violation in an operation B body; empty when it is valid.
pub fn create_call(call: &CreateCall) -> Vec<Violation> {
    let mut out = Vec::new();
    call.wrong_types(&Pointer::Root, &mut out);
    // Operation B's Rust field names are its JSON names.
    garde_rules(call, &[], &mut out);
    checks::create_call(call, &mut out);
    finish(out)
}

/// Every violation in an operation A body; empty when it is valid.
pub fn send_call_data(call: &SendCallData) -> Vec<Violation> {
    let mut out = Vec::new();
    call.wrong_types(&Pointer::Root, &mut out);
    let names = [SendCallData::FIELD_NAMES, SimpleMetadata::FIELD_NAMES, TranscriptItem::FIELD_NAMES];
    garde_rules(call, &names, &mut out);
    checks::send_call_data(call, &mut out);
    finish(out)
}

fn garde_rules<T: Validate<Context = ()>>(value: &T, names: &[&[(&str, &'static str)]], out: &mut Vec<Violation>) {
    if let Err(report) = garde::i18n::with_i18n(messages::Messages, || value.validate()) {
        for (path, error) in report.iter() {
            let (code, message) = messages::decode(error.message());
            out.push(Violation::new(pointer::from_garde_path(&path.to_string(), names), code, message));
        }
    }
}

/// Sorts, removes repeats, and drops what follows from a wrong type: a field that is
/// not an object has no members to be missing. Linear in the violations (each pointer's
/// ancestors are looked up in a set), then a sort.
fn finish(mut out: Vec<Violation>) -> Vec<Violation> {
    let wrong: HashSet<String> = out.iter().filter(|v| v.code == Code::Type).map(|v| v.pointer.clone()).collect();
    if !wrong.is_empty() {
        out.retain(|v| v.code == Code::Type || !under_any(&v.pointer, &wrong));
    }
    out.sort();
    out.dedup();
    out
}

/// Whether `pointer` or one of its ancestors is in `set`.
fn under_any(pointer: &str, set: &HashSet<String>) -> bool {
    set.contains(pointer) || pointer.match_indices('/').any(|(i, _)| set.contains(&pointer[..i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_below_a_wrong_type_are_dropped_and_others_kept() {
        let out = finish(vec![
            Violation::new("/a/b", Code::Required, "is required"),
            Violation::new("/a", Code::Type, "must be an object, found a string"),
            Violation::new("/ab", Code::Required, "is required"),
            Violation::new("/a", Code::Required, "is required"),
        ]);
        let pointers: Vec<_> = out.iter().map(|v| (v.pointer.as_str(), v.code)).collect();
        assert_eq!(pointers, [("/a", Code::Type), ("/ab", Code::Required)]);
    }
}
