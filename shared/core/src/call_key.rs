//! A call's partition key in the Calls table, `CALL#<workspace>#<call id>`: written by the
//! store, read back from its stream's images by the events (`events::change`).

/// Partition key of a call: one namespace per workspace, shared by both operations.
pub fn call_pk(workspace_id: u64, call_id: &str) -> String {
    format!("CALL#{workspace_id}#{call_id}")
}

/// The workspace and call id a call partition key holds (the call id may hold `#`).
pub fn parse_call_pk(pk: &str) -> Option<(u64, &str)> {
    let rest = pk.strip_prefix("CALL#")?;
    let (workspace, call_id) = rest.split_once('#')?;
    Some((workspace.parse().ok()?, call_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reads_back_what_it_was_made_of() {
        assert_eq!(parse_call_pk(&call_pk(7, "call#1")), Some((7, "call#1")));
        assert_eq!(parse_call_pk("CALL#x#c"), None);
        assert_eq!(parse_call_pk("REV#7#c"), None);
    }
}
