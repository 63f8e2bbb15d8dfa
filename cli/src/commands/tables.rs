//! `callctl tables create`: both tables, from the one definition in call-ingest-store;
//! `callctl tables reindex`: calls stored before the listing indexes, listed.

use anyhow::Context;
use call_ingest_store::calls::tables::{self, TableDef};
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use crate::output::Output;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Creates the Calls and Directory tables (named by CALLS_TABLE and DIRECTORY_TABLE)
    /// unless they exist; safe to run again.
    Create,
    /// Lists calls stored before the listing indexes existed (sets their listing
    /// attributes); safe to run again.
    Reindex,
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        match self {
            Command::Create => {
                let calls = create(backend, &tables::CALLS, &backend.config.calls_table).await?;
                let directory = create(backend, &tables::DIRECTORY, &backend.config.directory_table).await?;
                let value = json!({
                    "calls": {"table": backend.config.calls_table, "status": calls},
                    "directory": {"table": backend.config.directory_table, "status": directory},
                });
                out.show(&value, || {
                    format!(
                        "calls table {}: {calls}\ndirectory table {}: {directory}\n",
                        backend.config.calls_table, backend.config.directory_table
                    )
                })?;
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
