//! Events out (issue 33): what a workspace's own endpoints are sent when a call is stored,
//! revised or erased, as the Standard Webhooks specification has it (standardwebhooks.com).
//! Pure parts only: which events a change to a call makes ([`change`]), their bodies
//! ([`payload`]), the message carrying one to one endpoint ([`delivery`]), the signature ([`signing`]), when a failed delivery is tried again
//! ([`retry`]), and the checks that keep an endpoint from pointing into our own network
//! ([`address`] for an address, [`target`] for a URL).

pub mod address;
pub mod change;
pub mod delivery;
pub mod payload;
pub mod retry;
pub mod signing;
pub mod target;

/// What happened to a call, as an event's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum EventType {
    /// A new call stored.
    #[serde(rename = "call.stored")]
    CallStored,
    /// A new revision of a call (a late one below newer content too).
    #[serde(rename = "call.revised")]
    CallRevised,
    /// A call erased (by the erase endpoint, or by its workspace's retention).
    #[serde(rename = "call.erased")]
    CallErased,
}

impl EventType {
    pub const ALL: [EventType; 3] = [EventType::CallStored, EventType::CallRevised, EventType::CallErased];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::CallStored => "call.stored",
            EventType::CallRevised => "call.revised",
            EventType::CallErased => "call.erased",
        }
    }

    pub fn parse(text: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}
