//! call-ingest-core: what a call is, without any I/O. The wire types of both operations
//! and their lenient parsing ([`api`]), validation ([`validate`]), normalisation
//! ([`normalize`]) and the call document they build ([`call`]).
//!
//! A body flows one way: [`api::counts`] (count limits, on the bytes) → [`api`] (typed
//! parse) → [`validate`] → [`normalize`] → [`call::CallDocument`], all driven by
//! [`call::pipeline`]. Each step is a plain function that can be tested without the next.
//!
//! May import no other call-ingest crate, no AWS SDK, no tokio: the fuzzers and the
//! pipeline benchmark build it alone.
//!
//! [`privacy`] applies a workspace's data policy to a document before it is stored.
//!
//! [`events`] signs the events sent to a workspace's endpoints and checks where those are.
//!
//! [`providers`] maps Vapi's, Retell's and ElevenLabs' own webhooks to operation B's record
//! and checks their signatures; the record then takes B's path.

pub mod api;
pub mod call;
pub mod call_key;
pub mod events;
pub mod normalize;
pub mod privacy;
pub mod providers;
pub mod validate;

pub use call::{CallDocument, Operation};
