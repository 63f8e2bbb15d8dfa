//! Validation: every rule of the specification and the contract, each violation reported
//! with a JSON pointer, a code and a message, all at once.
//!
//! Three passes over the parsed record, none of which stops at the first problem:
//! wrong JSON types noted while parsing ([`crate::api::lenient`]), the garde rules on the
//! record types (limits, required fields, allowed values: [`rules`], [`messages`]), and
//! the rules that span fields ([`checks`]).

pub mod checks;
pub mod messages;
pub mod pointer;
pub mod rules;

use garde::Validate;

use crate::api::lenient::WrongTypes;
use crate::api::send_call_data::{SimpleMetadata, TranscriptItem};
use crate::api::{Code, CreateCall, SendCallData, Violation};
use pointer::Pointer;

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
/// not an object has no members to be missing.
fn finish(mut out: Vec<Violation>) -> Vec<Violation> {
    let wrong: Vec<String> = out.iter().filter(|v| v.code == Code::Type).map(|v| v.pointer.clone()).collect();
    if !wrong.is_empty() {
        out.retain(|v| {
            v.code == Code::Type
                || !wrong.iter().any(|w| {
                    v.pointer.strip_prefix(w.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                })
        });
    }
    out.sort();
    out.dedup();
    out
}
