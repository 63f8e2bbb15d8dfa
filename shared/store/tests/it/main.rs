//! call-ingest-store's integration tests, against the local DynamoDB and its fault layer
//! (`testkit`): one binary, a module per subject.

mod bound;
mod calls;
mod calls_faults;
mod limits;
mod template;
