//! Configuration, read from the environment once, in `main`.

use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::Credentials;

use crate::day::RetentionDay;
use crate::directory::limits::MAX_LIMIT;

/// Everything the functions and `callctl` read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `CALLS_TABLE` (default `calls`).
    pub calls_table: String,
    /// `DIRECTORY_TABLE` (default `directory`).
    pub directory_table: String,
    /// `FRAMES_BUCKET` (default `call-ingest-frames`): the S3 bucket of the frames too large
    /// to keep inline.
    pub frames_bucket: String,
    /// `ID_BLOCK_SIZE`: internal ids reserved per counter update (default 100).
    pub id_block_size: u64,
    /// `DIRECTORY_CACHE_TTL_SECS`: how long a credential or agent stays cached (default
    /// and maximum 60 s; 0 turns the cache off).
    pub cache_ttl: Duration,
    /// `MAX_BODY_BYTES`: larger bodies, as received, get 413 (default 6 MiB; in AWS the
    /// event limit refuses an uncompressed body before this does).
    pub max_body_bytes: usize,
    /// `MAX_DECOMPRESSED_BYTES`: compressed bodies that expand past this get 413 (default
    /// 32 MiB, at most 64 MiB).
    pub max_decompressed_bytes: usize,
    /// `RATE_LIMIT_PER_SECOND`: requests a workspace may make per second, unless
    /// `callctl workspace limit` gave it its own limit (default 20, at most 1,000).
    pub rate_limit: u32,
    /// `TRACE_RATE_LIMIT_PER_SECOND`: trace exports a workspace may make per second, a
    /// budget apart from its calls' (default 100, at most 1,000).
    pub trace_rate_limit: u32,
    /// `PII_MODEL_REQUESTS_PER_SECOND`: requests to the model of personal data (AWS
    /// Comprehend, for workspaces whose policy names it) a workspace may make per second
    /// (default 5, at most 1,000). Comprehend's quota is the account's: this keeps one
    /// workspace from spending it for all; past it, calls get the rules alone.
    pub model_rate_limit: u32,
    /// `EVENTS_ALLOW_LOOPBACK`: event endpoints may be `http` to a loopback address (the
    /// local stack's receivers). Only the local stack sets it; `template.yaml` never does.
    pub events_allow_loopback: bool,
    /// `WARM_UP`: open the DynamoDB connection during init (default off).
    pub warm_up: bool,
    /// `LOG_FORMAT=json` for one JSON object per line (Lambda); otherwise readable text.
    pub json_logs: bool,
    /// `CURSOR_SECRET`: the key that signs list cursors, the same for every instance (at
    /// least 32 characters). Only list-calls needs it, and refuses to start without it.
    pub cursor_secret: Option<CursorKey>,
    /// `HOOK_KEY_ID`: the KMS key (id, ARN or alias) that seals webhook secrets (default
    /// `alias/call-ingest-webhooks`).
    pub hook_key_id: String,
    /// A day's length for retention: 86,400,000 ms, unless the local stack shortens it.
    pub retention_day: RetentionDay,
}

/// A value that is never printed (`Debug` shows its length only).
#[derive(Clone, PartialEq, Eq)]
pub struct CursorKey(String);

impl CursorKey {
    pub fn new(value: impl Into<String>) -> CursorKey {
        CursorKey(value.into())
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CursorKey({} bytes)", self.0.len())
    }
}

/// The shortest `CURSOR_SECRET` taken.
pub const MIN_CURSOR_KEY_CHARS: usize = 32;

/// A variable that is set but cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("environment variable {name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    name: &'static str,
    value: String,
    reason: &'static str,
}

/// Requests per second a workspace may make unless given its own limit.
pub const DEFAULT_RATE_LIMIT: u32 = 20;
pub const DEFAULT_TRACE_RATE_LIMIT: u32 = 100;
/// Model requests a workspace may make per second unless configured otherwise.
pub const DEFAULT_MODEL_RATE_LIMIT: u32 = 5;

/// The default body limit: 6 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads variables through `get` (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let number = |name: &'static str, default: u64, min: u64, max: u64| -> Result<u64, ConfigError> {
            match get(name) {
                None => Ok(default),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if (min..=max).contains(&n) => Ok(n),
                    _ => Err(ConfigError { name, value: v, reason: "not a whole number in range" }),
                },
            }
        };
        let flag = |name: &'static str| get(name).is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"));
        Ok(Config {
            calls_table: get("CALLS_TABLE").unwrap_or_else(|| "calls".to_owned()),
            directory_table: get("DIRECTORY_TABLE").unwrap_or_else(|| "directory".to_owned()),
            frames_bucket: get("FRAMES_BUCKET").unwrap_or_else(|| "call-ingest-frames".to_owned()),
            id_block_size: number("ID_BLOCK_SIZE", 100, 1, 1_000_000)?,
            cache_ttl: Duration::from_secs(number("DIRECTORY_CACHE_TTL_SECS", 60, 0, 60)?),
            max_body_bytes: number("MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES as u64, 1, 64 << 20)? as usize,
            max_decompressed_bytes: number("MAX_DECOMPRESSED_BYTES", 32 << 20, 1, 64 << 20)? as usize,
            rate_limit: number("RATE_LIMIT_PER_SECOND", DEFAULT_RATE_LIMIT as u64, 1, MAX_LIMIT as u64)? as u32,
            trace_rate_limit: number(
                "TRACE_RATE_LIMIT_PER_SECOND",
                DEFAULT_TRACE_RATE_LIMIT as u64,
                1,
                MAX_LIMIT as u64,
            )? as u32,
            model_rate_limit: number(
                "PII_MODEL_REQUESTS_PER_SECOND",
                DEFAULT_MODEL_RATE_LIMIT as u64,
                1,
                MAX_LIMIT as u64,
            )? as u32,
            events_allow_loopback: flag("EVENTS_ALLOW_LOOPBACK"),
            warm_up: flag("WARM_UP"),
            json_logs: get("LOG_FORMAT").is_some_and(|v| v.eq_ignore_ascii_case("json")),
            retention_day: RetentionDay::new(
                number("RETENTION_DAY_SECONDS", 86_400, 1, 86_400)? * 1000,
                match get("RETENTION_DAY_WORKSPACES").filter(|v| !v.trim().is_empty()) {
                    None => None,
                    Some(v) => {
                        Some(v.split(',').map(|id| id.trim().parse::<u64>()).collect::<Result<_, _>>().map_err(
                            |_| ConfigError {
                                name: "RETENTION_DAY_WORKSPACES",
                                value: v.clone(),
                                reason: "not a comma-separated list of workspace ids",
                            },
                        )?)
                    }
                },
            ),
            hook_key_id: get("HOOK_KEY_ID").filter(|v| !v.is_empty()).unwrap_or_else(|| DEFAULT_HOOK_KEY.to_owned()),
            cursor_secret: match get("CURSOR_SECRET").filter(|v| !v.is_empty()) {
                None => None,
                Some(v) if v.len() >= MIN_CURSOR_KEY_CHARS => Some(CursorKey(v)),
                Some(v) => {
                    return Err(ConfigError {
                        name: "CURSOR_SECRET",
                        value: format!("({} characters)", v.len()),
                        reason: "shorter than 32 characters",
                    })
                }
            },
        })
    }
}

/// The KMS key that seals webhook secrets, unless `HOOK_KEY_ID` names another.
pub const DEFAULT_HOOK_KEY: &str = "alias/call-ingest-webhooks";

/// The HTTPS client every DynamoDB client here uses: rustls on ring.
pub fn http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https()
}

/// Timeouts that keep a request well inside API Gateway's 30 s: each attempt at most 3 s,
/// the whole operation (3 attempts, see [`retries`]) at most 10 s.
pub fn timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(Duration::from_secs(3))
        .operation_timeout(Duration::from_secs(10))
        .build()
}

/// The retry budget: 3 attempts with short backoff.
pub fn retries() -> RetryConfig {
    RetryConfig::standard()
        .with_max_attempts(3)
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_secs(1))
}

/// A config builder of SDK `$sdk` with our HTTP client, timeouts and retries, `region` and
/// `credentials`, for `endpoint` (a local server) when given, else AWS's.
macro_rules! builder_for {
    ($sdk:ident, $endpoint:expr, $region:expr, $credentials:expr, $http:expr) => {{
        let builder = $sdk::Config::builder()
            .behavior_version($sdk::config::BehaviorVersion::latest())
            .region($sdk::config::Region::new($region.to_owned()))
            .credentials_provider($credentials)
            .http_client($http)
            .timeout_config(timeouts())
            .retry_config(retries());
        match $endpoint {
            Some(endpoint) => builder.endpoint_url(endpoint),
            None => builder,
        }
    }};
    ($sdk:ident, $endpoint:expr, $region:expr, $credentials:expr) => {
        builder_for!($sdk, $endpoint, $region, $credentials, http_client())
    };
}

/// A DynamoDB client for `endpoint` (a local server) or AWS's, with our HTTP client,
/// timeouts and retries.
pub fn dynamodb_client_with(
    endpoint: Option<&str>,
    region: &str,
    credentials: Credentials,
) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(builder_for!(aws_sdk_dynamodb, endpoint, region, credentials).build())
}

/// A KMS client for `endpoint` (the local server) or AWS's, with the same HTTP client,
/// timeouts and retries.
pub fn kms_client_with(endpoint: Option<&str>, region: &str, credentials: Credentials) -> aws_sdk_kms::Client {
    aws_sdk_kms::Client::from_conf(builder_for!(aws_sdk_kms, endpoint, region, credentials).build())
}

/// An S3 client for `endpoint` (a local server, addressed path-style: `<bucket>.127.0.0.1`
/// does not resolve) or AWS's, with the same HTTP client, timeouts and retries as DynamoDB's.
pub fn s3_client_with(endpoint: Option<&str>, region: &str, credentials: Credentials) -> aws_sdk_s3::Client {
    let builder = builder_for!(aws_sdk_s3, endpoint, region, credentials).force_path_style(endpoint.is_some());
    aws_sdk_s3::Client::from_conf(builder.build())
}

/// The functions' AWS settings, from the environment Lambda provides: `AWS_REGION`,
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, and optionally
/// `AWS_ENDPOINT_URL_DYNAMODB` / `_S3` / `_KMS` / `_SQS` / `_COMPREHEND` (or `AWS_ENDPOINT_URL`) for a
/// local server. Not aws-config's whole provider chain
/// (profiles, SSO, STS): the functions never need it, and it would be a third of their
/// binary. `callctl` uses that chain instead.
#[derive(Debug, Clone)]
pub struct EnvClient {
    region: String,
    credentials: Credentials,
    endpoint: Option<String>,
    s3_endpoint: Option<String>,
    kms_endpoint: Option<String>,
    sqs_endpoint: Option<String>,
    comprehend_endpoint: Option<String>,
    /// One HTTP client for the instance's SDK clients: one connector and its connection
    /// pool, built on the first request of any of them (the CA files are read once per
    /// process either way).
    http: aws_sdk_dynamodb::config::SharedHttpClient,
}

impl EnvClient {
    /// Reads and checks the settings (no I/O).
    pub fn from_env() -> Result<EnvClient, ConfigError> {
        EnvClient::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<EnvClient, ConfigError> {
        let missing =
            |name: &'static str| ConfigError { name, value: String::new(), reason: "must be set (Lambda sets it)" };
        let region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION")).ok_or_else(|| missing("AWS_REGION"))?;
        let credentials = Credentials::new(
            get("AWS_ACCESS_KEY_ID").ok_or_else(|| missing("AWS_ACCESS_KEY_ID"))?,
            get("AWS_SECRET_ACCESS_KEY").ok_or_else(|| missing("AWS_SECRET_ACCESS_KEY"))?,
            get("AWS_SESSION_TOKEN"),
            None,
            "environment",
        );
        let endpoint = get("AWS_ENDPOINT_URL_DYNAMODB").or_else(|| get("AWS_ENDPOINT_URL"));
        let s3_endpoint = get("AWS_ENDPOINT_URL_S3").or_else(|| get("AWS_ENDPOINT_URL"));
        let kms_endpoint = get("AWS_ENDPOINT_URL_KMS").or_else(|| get("AWS_ENDPOINT_URL"));
        let sqs_endpoint = get("AWS_ENDPOINT_URL_SQS").or_else(|| get("AWS_ENDPOINT_URL"));
        let comprehend_endpoint = get("AWS_ENDPOINT_URL_COMPREHEND").or_else(|| get("AWS_ENDPOINT_URL"));
        Ok(EnvClient {
            region,
            credentials,
            endpoint,
            s3_endpoint,
            kms_endpoint,
            sqs_endpoint,
            comprehend_endpoint,
            http: http_client(),
        })
    }

    /// Builds the DynamoDB client (this loads the TLS trust store).
    pub fn client(&self) -> aws_sdk_dynamodb::Client {
        let (endpoint, credentials) = (self.endpoint.as_deref(), self.credentials.clone());
        aws_sdk_dynamodb::Client::from_conf(
            builder_for!(aws_sdk_dynamodb, endpoint, &self.region, credentials, self.http.clone()).build(),
        )
    }

    /// Builds the S3 client.
    pub fn s3_client(&self) -> aws_sdk_s3::Client {
        let (endpoint, credentials) = (self.s3_endpoint.as_deref(), self.credentials.clone());
        let builder = builder_for!(aws_sdk_s3, endpoint, &self.region, credentials, self.http.clone());
        aws_sdk_s3::Client::from_conf(builder.force_path_style(endpoint.is_some()).build())
    }

    /// Builds the KMS client.
    pub fn kms_client(&self) -> aws_sdk_kms::Client {
        let (endpoint, credentials) = (self.kms_endpoint.as_deref(), self.credentials.clone());
        aws_sdk_kms::Client::from_conf(
            builder_for!(aws_sdk_kms, endpoint, &self.region, credentials, self.http.clone()).build(),
        )
    }

    /// Builds the Comprehend client (a workspace's model of personal data).
    pub fn comprehend_client(&self) -> aws_sdk_comprehend::Client {
        let (endpoint, credentials) = (self.comprehend_endpoint.as_deref(), self.credentials.clone());
        aws_sdk_comprehend::Client::from_conf(
            builder_for!(aws_sdk_comprehend, endpoint, &self.region, credentials, self.http.clone()).build(),
        )
    }

    /// Builds the SQS client.
    pub fn sqs_client(&self) -> aws_sdk_sqs::Client {
        let (endpoint, credentials) = (self.sqs_endpoint.as_deref(), self.credentials.clone());
        aws_sdk_sqs::Client::from_conf(
            builder_for!(aws_sdk_sqs, endpoint, &self.region, credentials, self.http.clone()).build(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let c = config(&[]).unwrap();
        assert_eq!(c.calls_table, "calls");
        assert_eq!(c.id_block_size, 100);
        assert_eq!(c.cache_ttl, Duration::from_secs(60));
        assert_eq!(c.max_body_bytes, 6 * 1024 * 1024);
        assert!(!c.warm_up && !c.json_logs);
        assert_eq!(c.cursor_secret, None);
    }

    #[test]
    fn the_cursor_secret_is_long_and_never_printed() {
        let e = config(&[("CURSOR_SECRET", "short-and-secret")]).unwrap_err().to_string();
        assert!(!e.contains("short-and-secret"), "{e}");
        let c = config(&[("CURSOR_SECRET", &"k".repeat(40))]).unwrap();
        assert_eq!(c.cursor_secret.as_ref().map(CursorKey::as_bytes), Some("k".repeat(40).as_bytes()));
        assert!(!format!("{c:?}").contains("kkkk"));
    }

    #[test]
    fn the_client_needs_region_and_credentials_from_the_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert!(EnvClient::from_lookup(env(&[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "b")])).is_err());
        assert!(EnvClient::from_lookup(env(&[("AWS_REGION", "eu-west-1"), ("AWS_ACCESS_KEY_ID", "a")])).is_err());
        let client = EnvClient::from_lookup(env(&[
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "a"),
            ("AWS_SECRET_ACCESS_KEY", "b"),
            ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000"),
        ]))
        .unwrap()
        .client();
        assert_eq!(client.config().region().map(|r| r.as_ref()), Some("eu-west-1"));
    }

    #[test]
    fn a_short_day_is_for_the_workspaces_it_names_or_for_every_one() {
        let day = |vars: &[(&str, &str)]| config(vars).map(|c| (c.retention_day.ms(7), c.retention_day.ms(8)));
        assert_eq!(day(&[]).unwrap(), (86_400_000, 86_400_000));
        assert_eq!(day(&[("RETENTION_DAY_SECONDS", "20")]).unwrap(), (20_000, 20_000));
        let named = [("RETENTION_DAY_SECONDS", "20"), ("RETENTION_DAY_WORKSPACES", "3, 7")];
        assert_eq!(day(&named).unwrap(), (20_000, 86_400_000));
        assert!(day(&[("RETENTION_DAY_SECONDS", "20"), ("RETENTION_DAY_WORKSPACES", "7,x")]).is_err());
        assert!(day(&[("RETENTION_DAY_SECONDS", "86401")]).is_err());
    }

    #[test]
    fn cache_lifetime_above_sixty_seconds_is_refused() {
        assert!(config(&[("DIRECTORY_CACHE_TTL_SECS", "61")]).is_err());
        assert!(config(&[("ID_BLOCK_SIZE", "zero")]).is_err());
        assert_eq!(
            config(&[("LOG_FORMAT", "JSON"), ("WARM_UP", "true")]).map(|c| (c.json_logs, c.warm_up)).unwrap(),
            (true, true)
        );
    }
}
