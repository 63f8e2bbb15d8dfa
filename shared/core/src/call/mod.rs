//! A call: the normalised document both operations produce ([`document`]), and the one-way
//! path from request bytes to it ([`pipeline`]: parse → validate → normalise). The
//! document depends on nothing but the wire types; normalisation builds it; the pipeline
//! runs the steps in order.

pub mod document;
pub mod pipeline;

pub use document::{hex, CallDocument, Operation, Provider, Summary, SCHEMA_VERSION};
pub use pipeline::{
    accept_create_call, accept_relaxed, accept_send_call_data, ingest, parse_create_call, parse_send_call_data,
    Rejection,
};
