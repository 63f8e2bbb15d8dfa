//! call-ingest-core's integration tests: one binary, a module per subject.

mod counted;
mod json_checks;
mod normalisation;
mod pii_corpus;
mod properties;
mod providers;
mod validation;
