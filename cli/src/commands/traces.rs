//! `callctl traces`: OpenTelemetry traces kept (`POST /otel/v1/traces`). `unjoined` lists a
//! workspace's traces that joined no call yet (joining first those whose keys now name one).

use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use crate::output::{escape, table, time_ms, Lines, Output};

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The workspace's traces that joined no call: none of their keys names one of its calls.
    Unjoined {
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
    },
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        match self {
            Command::Unjoined { workspace } => {
                let traces = backend.store().unjoined_traces(workspace).await?;
                let value = json!({"workspace_id": workspace, "traces": traces.iter().map(|t| json!({
                    "trace_id": t.trace, "first_received_ms": t.first_ms, "spans": t.spans, "keys": t.keys,
                })).collect::<Vec<_>>()});
                out.show(&value, || {
                    let rows: Vec<Vec<String>> = traces
                        .iter()
                        .map(|t| {
                            let keys = t.keys.iter().map(|k| escape(k, Lines::Escape).into_owned()).collect::<Vec<_>>();
                            vec![t.trace.clone(), time_ms(t.first_ms), t.spans.to_string(), keys.join(", ")]
                        })
                        .collect();
                    table(&["trace", "first received", "spans", "keys (best first)"], &rows)
                })?;
            }
        }
        Ok(())
    }
}
