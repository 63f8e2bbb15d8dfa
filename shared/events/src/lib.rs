//! Events out (issue 33), the part that meets the network: one signed event sent to one
//! endpoint ([`send`]), at an address checked first and connected to as checked
//! ([`resolve`] finds the addresses; tests give their own).
//!
//! What is sent, and when it is tried again, is decided in `call_ingest_core::events`.

pub mod resolve;
pub mod send;
