//! The plain-text transcript derived from the timeline when a client sends none.

use crate::api::create_call::Segment;

/// One line per `agent` / `user` segment with text, `Agent: …` / `User: …`, in order.
pub fn derive(segments: &[Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        let speaker = match s.role.as_deref() {
            Some("agent") => "Agent: ",
            Some("user") => "User: ",
            _ => continue,
        };
        let Some(text) = s.text.as_deref().filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(speaker);
        out.push_str(text);
    }
    out
}
