//! Reading every item of a partition whose sort key starts with a prefix, page by page.

use aws_sdk_dynamodb::Client;

use super::item::{s, Item};
use super::StoreError;

/// Every item of partition `pk` whose sort key starts with `prefix`, in sort-key order.
pub async fn query_prefix(
    client: &Client,
    table: &str,
    pk: &str,
    prefix: &str,
    consistent: bool,
) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let out = client
            .query()
            .table_name(table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(pk))
            .expression_attribute_values(":prefix", s(prefix))
            .consistent_read(consistent)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        items.extend(out.items.unwrap_or_default());
        start = out.last_evaluated_key;
        if start.is_none() {
            return Ok(items);
        }
    }
}
