//! Keys of the directory table's items and typed reading of their attributes.

pub use crate::calls::item::{get_s as field_s, get_u64 as field_u64};

pub fn credential_pk(digest: &str) -> String {
    format!("CRED#{digest}")
}
pub fn credential_id_pk(public_id: &str) -> String {
    format!("CREDID#{public_id}")
}
pub const CREDENTIAL_SK: &str = "CRED";

pub fn workspace_pk(workspace_id: u64) -> String {
    format!("WS#{workspace_id}")
}
pub const WORKSPACE_SK: &str = "WS";
pub fn key_listing_sk(public_id: &str) -> String {
    format!("KEY#{public_id}")
}
pub fn agent_listing_sk(agent_id: &str) -> String {
    format!("AGENT#{agent_id}")
}

pub fn agent_pk(agent_id: &str) -> String {
    format!("AGENT#{agent_id}")
}
pub fn remote_pk(workspace_id: u64, remote_id: &str) -> String {
    format!("WS#{workspace_id}#REMOTE#{remote_id}")
}
pub const AGENT_SK: &str = "AGENT";
