//! The call metadata merge: `metadata` goes into `general_meta_data_raw` for storage.

use serde_json::{Map, Value};

/// Top-level keys of both; on a collision `general_meta_data_raw` wins.
pub fn merge(metadata: Map<String, Value>, general: Option<Map<String, Value>>) -> Map<String, Value> {
    let mut merged = metadata;
    if let Some(general) = general {
        merged.extend(general);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn general_meta_data_raw_wins_on_a_collision() {
        let Value::Object(m) = json!({"a": 1, "shared": "from metadata"}) else { unreachable!() };
        let Value::Object(g) = json!({"b": 2, "shared": "from general"}) else { unreachable!() };
        assert_eq!(Value::Object(merge(m, Some(g))), json!({"a": 1, "b": 2, "shared": "from general"}));
    }
}
