//! The two tables' definitions, in one place: `callctl tables create` and the tests create
//! them from here, and a test compares them with `template.yaml`.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_dynamodb::Client;

use super::StoreError;

/// Partition and sort key names of both tables.
pub const PK: &str = "pk";
pub const SK: &str = "sk";
/// The TTL attribute of both tables (epoch seconds).
pub const TTL_ATTRIBUTE: &str = "expires_at";

/// A global secondary index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Index {
    pub name: &'static str,
    pub hash: (&'static str, ScalarKind),
    pub range: Option<(&'static str, ScalarKind)>,
    /// `None`: keys only; `Some(list)`: those attributes as well.
    pub include: Option<&'static [&'static str]>,
}

/// The type of a key attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    S,
    N,
}

/// A table: its key, indexes, TTL and stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableDef {
    /// The template's logical id.
    pub logical_id: &'static str,
    pub indexes: &'static [Index],
    /// A stream of its changes, with both images (`NEW_AND_OLD_IMAGES`: send-events).
    pub stream: bool,
}

/// Looks up calls by internal id.
pub const BY_ID: Index = Index { name: "by-id", hash: ("id", ScalarKind::N), range: None, include: None };
/// What a listing shows of a call (projected into both listing indexes): a summary, no
/// transcript.
pub const SUMMARY: &[&str] = &[
    "call_id",
    "id",
    "agent_id",
    "operation",
    "revision",
    "start_ms",
    "end_ms",
    "duration_ms",
    "call_status",
    "user_sentiment",
    "created_at",
    "updated_at",
];
/// Lists a workspace's calls (and, filtered, one agent's), newest first: `listed_ws` (the workspace) and `listed_ms`
/// (the call's start, else when it was first received). Only heads carry them.
pub const BY_WORKSPACE: Index = Index {
    name: "by-workspace-listed",
    hash: ("listed_ws", ScalarKind::N),
    range: Some(("listed_ms", ScalarKind::N)),
    include: Some(SUMMARY),
};
/// The Calls table.
pub const CALLS: TableDef = TableDef { logical_id: "CallsTable", indexes: &[BY_ID, BY_WORKSPACE], stream: true };
/// The Directory table.
pub const DIRECTORY: TableDef = TableDef { logical_id: "DirectoryTable", indexes: &[], stream: false };

impl TableDef {
    /// Every attribute that is a key of the table or of an index, with its type.
    pub fn key_attributes(&self) -> Vec<(&'static str, ScalarKind)> {
        let mut out = vec![(PK, ScalarKind::S), (SK, ScalarKind::S)];
        for index in self.indexes {
            for key in std::iter::once(index.hash).chain(index.range) {
                if !out.contains(&key) {
                    out.push(key);
                }
            }
        }
        out
    }

    /// Creates the table `name` if it does not exist yet, waits until it is active and
    /// makes sure TTL is on (on a table that existed too). Answers whether it created it.
    pub async fn create(&self, client: &Client, name: &str) -> Result<bool, StoreError> {
        let kind = |k: ScalarKind| match k {
            ScalarKind::S => ScalarAttributeType::S,
            ScalarKind::N => ScalarAttributeType::N,
        };
        let key = |hash: &str, range: Option<&str>| -> Result<Vec<KeySchemaElement>, StoreError> {
            let mut keys = vec![KeySchemaElement::builder().attribute_name(hash).key_type(KeyType::Hash).build()?];
            if let Some(range) = range {
                keys.push(KeySchemaElement::builder().attribute_name(range).key_type(KeyType::Range).build()?);
            }
            Ok(keys)
        };
        let mut request = client
            .create_table()
            .table_name(name)
            .billing_mode(BillingMode::PayPerRequest)
            .set_key_schema(Some(key(PK, Some(SK))?));
        for (attribute, k) in self.key_attributes() {
            request = request.attribute_definitions(
                AttributeDefinition::builder().attribute_name(attribute).attribute_type(kind(k)).build()?,
            );
        }
        for index in self.indexes {
            let projection = match index.include {
                None => Projection::builder().projection_type(ProjectionType::KeysOnly).build(),
                Some(list) => Projection::builder()
                    .projection_type(ProjectionType::Include)
                    .set_non_key_attributes(Some(list.iter().map(|s| s.to_string()).collect()))
                    .build(),
            };
            request = request.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(index.name)
                    .set_key_schema(Some(key(index.hash.0, index.range.map(|r| r.0))?))
                    .projection(projection)
                    .build()?,
            );
        }
        if self.stream {
            request = request.stream_specification(
                aws_sdk_dynamodb::types::StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(aws_sdk_dynamodb::types::StreamViewType::NewAndOldImages)
                    .build()?,
            );
        }
        let created = match request.send().await {
            Ok(_) => true,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => false,
            Err(e) => return Err(StoreError::from_sdk(e)),
        };
        wait_until_active(client, name).await?;
        enable_ttl(client, name).await?;
        Ok(created)
    }
}

/// How long `create` waits for a table to become active.
const ACTIVE_WITHIN: Duration = Duration::from_secs(300);

/// Polls until the table is ACTIVE (a new table is CREATING for a while in AWS, and
/// refuses TTL and data requests until then).
async fn wait_until_active(client: &Client, name: &str) -> Result<(), StoreError> {
    let deadline = Instant::now() + ACTIVE_WITHIN;
    let mut pause = Duration::from_millis(100);
    loop {
        let out = client.describe_table().table_name(name).send().await;
        let status = match out {
            Ok(out) => out.table.and_then(|t| t.table_status),
            // Just created: DescribeTable may not see it yet.
            Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_not_found_exception()) => None,
            Err(e) => return Err(StoreError::from_sdk(e)),
        };
        if status == Some(TableStatus::Active) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(StoreError::Unavailable(format!("table {name} is not active after {ACTIVE_WITHIN:?}")));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Turns TTL on unless it is on (or turning on) already; any other answer is an error.
async fn enable_ttl(client: &Client, name: &str) -> Result<(), StoreError> {
    let described = client.describe_time_to_live().table_name(name).send().await.map_err(StoreError::from_sdk)?;
    if let Some(ttl) = described.time_to_live_description() {
        let on = matches!(ttl.time_to_live_status(), Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling));
        match ttl.attribute_name() {
            Some(TTL_ATTRIBUTE) if on => return Ok(()),
            Some(other) if on => {
                return Err(StoreError::Internal(format!(
                    "table {name} has TTL on attribute {other}, not {TTL_ATTRIBUTE}"
                )))
            }
            _ => {}
        }
    }
    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder().attribute_name(TTL_ATTRIBUTE).enabled(true).build()?,
        )
        .send()
        .await
        .map_err(StoreError::from_sdk)?;
    Ok(())
}
