//! `callctl tables create`: both tables, from the one definition in call-ingest-store, and
//! the frames' bucket;
//! `callctl tables reindex`: calls stored before the listing indexes, listed;
//! `callctl tables move-frames`: frames kept in chunk items, moved to S3.

use anyhow::Context;
use call_ingest_store::calls::tables::{self, TableDef};
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use crate::output::Output;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Creates the Calls and Directory tables (named by CALLS_TABLE and DIRECTORY_TABLE)
    /// and the frames' bucket (FRAMES_BUCKET) unless they exist; safe to run again.
    Create,
    /// Lists calls stored before the listing indexes existed (sets their listing
    /// attributes); safe to run again.
    Reindex,
    /// Moves the frames of calls stored before frames moved to S3 (chunk items) to the
    /// frames' bucket (FRAMES_BUCKET); safe to run again and alongside traffic.
    MoveFrames,
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        match self {
            Command::Create => {
                let calls = create(backend, &tables::CALLS, &backend.config.calls_table).await?;
                let directory = create(backend, &tables::DIRECTORY, &backend.config.directory_table).await?;
                let bucket = &backend.config.frames_bucket;
                let frames = match backend.store().frames().create_bucket().await {
                    Ok(true) => "created",
                    Ok(false) => "exists",
                    Err(e) => return Err(e).with_context(|| format!("cannot create bucket {bucket}")),
                };
                // The key that seals webhook secrets: the template makes it in AWS; a local
                // stack (a KMS endpoint set) gets one here.
                let local = ["AWS_ENDPOINT_URL_KMS", "AWS_ENDPOINT_URL"].iter().any(|v| std::env::var_os(v).is_some());
                let key = match (local, backend.sealer()) {
                    (true, Some(sealer)) => match sealer.create_key().await {
                        Ok(true) => "created",
                        Ok(false) => "exists",
                        Err(e) => return Err(e).context("cannot create the KMS key of webhook secrets"),
                    },
                    _ => "the template's",
                };
                let value = json!({
                    "hook_key": {"key": backend.config.hook_key_id, "status": key},
                    "calls": {"table": backend.config.calls_table, "status": calls},
                    "directory": {"table": backend.config.directory_table, "status": directory},
                    "frames": {"bucket": bucket, "status": frames},
                });
                out.show(&value, || {
                    format!(
                        "calls table {}: {calls}\ndirectory table {}: {directory}\nframes bucket {bucket}: {frames}\n\
                         webhook key {}: {key}\n",
                        backend.config.calls_table, backend.config.directory_table, backend.config.hook_key_id
                    )
                })?;
                Ok(())
            }
            Command::MoveFrames => {
                let moved = backend.store().move_chunks_to_s3().await.context("cannot move the frames")?;
                let value = json!({"table": backend.config.calls_table, "bucket": backend.config.frames_bucket, "moved": moved});
                out.show(&value, || format!("frames moved to S3: {moved}\n"))?;
                Ok(())
            }
            Command::Reindex => {
                let updated = backend.store().reindex().await.context("cannot reindex the calls")?;
                let value = json!({"table": backend.config.calls_table, "reindexed": updated});
                out.show(&value, || format!("calls listed anew: {updated}\n"))?;
                Ok(())
            }
        }
    }
}

/// Creates one table; answers "created" or "exists".
async fn create(backend: &Backend, def: &TableDef, name: &str) -> anyhow::Result<&'static str> {
    let created =
        def.create(backend.store().client(), name).await.with_context(|| format!("cannot create table {name}"))?;
    Ok(if created { "created" } else { "exists" })
}
