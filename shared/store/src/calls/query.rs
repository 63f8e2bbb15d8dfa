//! Reading the items of one partition whose sort keys fall in a range, page by page.

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

use super::item::{s, Item};
use super::StoreError;

/// Which sort keys of a partition to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortKeys {
    /// All of them.
    All,
    /// Those that start with this.
    Prefix(String),
    /// From the first to the second, both included.
    Between(String, String),
}

/// Every item of partition `pk` whose sort key is in `range`, in sort-key order; with
/// `projection`, only those attributes of each.
pub async fn query(
    client: &Client,
    table: &str,
    pk: &str,
    range: &SortKeys,
    consistent: bool,
    projection: Option<&[&str]>,
) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let mut request = client.query().table_name(table).expression_attribute_values(":pk", s(pk));
        // Every name through an alias: some (`operation`, `data`) are reserved words.
        if let Some(names) = projection {
            let aliases: Vec<String> = (0..names.len()).map(|i| format!("#p{i}")).collect();
            request = request.projection_expression(aliases.join(", "));
            for (alias, name) in aliases.into_iter().zip(names) {
                request = request.expression_attribute_names(alias, *name);
            }
        }
        let request = match range {
            SortKeys::All => request.key_condition_expression("pk = :pk"),
            SortKeys::Prefix(prefix) => request
                .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                .expression_attribute_values(":prefix", s(prefix)),
            SortKeys::Between(from, to) => request
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":from", s(from))
                .expression_attribute_values(":to", s(to)),
        };
        let out = request
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

/// Every item of `table` that `filter` keeps (with `values` for its placeholders), one scan
/// page at a time, each handed to `each` before the next is read; answers the sum of what
/// `each` answered. For operators' tools (`callctl tables …`), never for requests.
pub async fn scan_pages<F, Fut>(
    client: &Client,
    table: &str,
    filter: &str,
    values: &[(&str, AttributeValue)],
    mut each: F,
) -> Result<usize, StoreError>
where
    F: FnMut(Vec<Item>) -> Fut,
    Fut: std::future::Future<Output = Result<usize, StoreError>>,
{
    let mut total = 0;
    let mut start = None;
    loop {
        let mut request = client.scan().table_name(table).filter_expression(filter).set_exclusive_start_key(start);
        for (name, value) in values {
            request = request.expression_attribute_values(*name, value.clone());
        }
        let out = request.send().await.map_err(StoreError::from_sdk)?;
        total += each(out.items.unwrap_or_default()).await?;
        start = out.last_evaluated_key;
        if start.is_none() {
            return Ok(total);
        }
    }
}
