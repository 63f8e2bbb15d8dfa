//! `callctl`: the operator's command line for call-ingest. It sets up the tables, workspaces,
//! agents, API keys, sessions and webhook hooks, and reads stored calls back.
//!
//! It reads the same environment as the functions (`CALLS_TABLE`, `DIRECTORY_TABLE`,
//! `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_REGION`, ...). Output is text for people, or exactly one
//! JSON document with `--json`. A failure prints one line, `callctl: <reason>`, on stderr
//! and exits 1 (2 for a command line clap cannot make sense of, or input refused before
//! anything was done: `output::Refusal`).

mod commands;
mod output;

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use call_ingest_store::config::{self, Config};
use call_ingest_store::Backend;
use clap::{Parser, Subcommand};

use commands::{agent, call, endpoint, key, session, tables, traces, webhook, workspace};
use output::Output;

/// Operator CLI for call-ingest.
#[derive(Debug, Parser)]
#[command(name = "callctl", version)]
struct Cli {
    /// Print exactly one JSON document on stdout instead of text (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    noun: Noun,
}

#[derive(Debug, Subcommand)]
enum Noun {
    /// The Calls and Directory tables.
    #[command(subcommand)]
    Tables(tables::Command),
    /// Workspaces: the tenants calls belong to.
    #[command(subcommand)]
    Workspace(workspace::Command),
    /// Agents: who calls are stored for, within a workspace.
    #[command(subcommand)]
    Agent(agent::Command),
    /// API keys: a workspace's credential for both operations.
    #[command(subcommand)]
    Key(key::Command),
    /// Session tokens: a user's credential for Create Call, with an expiry.
    #[command(subcommand)]
    Session(session::Command),
    /// Stored calls.
    #[command(subcommand)]
    Call(call::Command),
    /// Webhook hooks: where Vapi, Retell or ElevenLabs post their calls.
    #[command(subcommand)]
    Webhook(webhook::Command),
    /// Event endpoints: where a workspace's call.stored, call.revised and call.erased
    /// events are sent (Standard Webhooks).
    #[command(subcommand)]
    Endpoint(endpoint::Command),
    /// OpenTelemetry traces sent to /otel/v1/traces.
    #[command(subcommand)]
    Traces(traces::Command),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let out = Output::new(cli.json);
    match run(cli.noun, &out).await {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that went away (`callctl call list | head`) is not a failure.
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` joins the causes on one line; SDK messages may still hold newlines.
            let reason = format!("{e:#}").split_whitespace().collect::<Vec<_>>().join(" ");
            // Nothing more can be done if stderr is gone too.
            let _ = writeln!(std::io::stderr(), "callctl: {reason}");
            match e.is::<output::Refusal>() {
                true => ExitCode::from(2),
                false => ExitCode::FAILURE,
            }
        }
    }
}

/// DynamoDB, S3, KMS and SQS clients through aws-config's whole provider chain (environment,
/// profiles, SSO, ...), as an operator's machine needs, with the functions' HTTP client,
/// timeouts and retries. A local S3 (an endpoint URL set) is addressed path-style.
async fn clients() -> (aws_sdk_dynamodb::Client, aws_sdk_s3::Client, aws_sdk_kms::Client, aws_sdk_sqs::Client) {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(config::http_client())
        .timeout_config(config::timeouts())
        .retry_config(config::retries())
        .load()
        .await;
    let local = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"].iter().any(|v| std::env::var_os(v).is_some());
    let s3 = aws_sdk_s3::config::Builder::from(&sdk).force_path_style(local).build();
    let kms = aws_sdk_kms::Client::new(&sdk);
    (aws_sdk_dynamodb::Client::new(&sdk), aws_sdk_s3::Client::from_conf(s3), kms, aws_sdk_sqs::Client::new(&sdk))
}

async fn run(noun: Noun, out: &Output) -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let (dynamodb, s3, kms, sqs) = clients().await;
    let backend = Backend::new(config, dynamodb, s3).with_kms(kms).with_sqs(sqs);
    // Without a region the SDK fails every request with a long construction error; say
    // what is missing instead.
    if backend.store().client().config().region().is_none() {
        bail!("no AWS region configured: set AWS_REGION");
    }
    match noun {
        Noun::Tables(c) => c.run(&backend, out).await,
        Noun::Workspace(c) => c.run(&backend, out).await,
        Noun::Agent(c) => c.run(&backend, out).await,
        Noun::Key(c) => c.run(&backend, out).await,
        Noun::Session(c) => c.run(&backend, out).await,
        Noun::Call(c) => c.run(&backend, out).await,
        Noun::Webhook(c) => c.run(&backend, out).await,
        Noun::Endpoint(c) => c.run(&backend, out).await,
        Noun::Traces(c) => c.run(&backend, out).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
