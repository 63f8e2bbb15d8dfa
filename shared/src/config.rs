//! Configuration, read from the environment once, in `main`.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;

/// Everything the functions and `callctl` read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `CALLS_TABLE` (default `calls`).
    pub calls_table: String,
    /// `DIRECTORY_TABLE` (default `directory`).
    pub directory_table: String,
    /// `ID_BLOCK_SIZE`: internal ids reserved per counter update (default 100).
    pub id_block_size: u64,
    /// `DIRECTORY_CACHE_TTL_SECS`: how long a credential or agent stays cached (default
    /// and maximum 60 s; 0 turns the cache off).
    pub cache_ttl: Duration,
    /// `MAX_BODY_BYTES`: larger bodies get 413 (default 6 MiB, Lambda's payload limit).
    pub max_body_bytes: usize,
    /// `WARM_UP`: open the DynamoDB connection during init (default off).
    pub warm_up: bool,
    /// `LOG_FORMAT=json` for one JSON object per line (Lambda); otherwise readable text.
    pub json_logs: bool,
}

/// A variable that is set but cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("environment variable {name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    name: &'static str,
    value: String,
    reason: &'static str,
}

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
            id_block_size: number("ID_BLOCK_SIZE", 100, 1, 1_000_000)?,
            cache_ttl: Duration::from_secs(number("DIRECTORY_CACHE_TTL_SECS", 60, 0, 60)?),
            max_body_bytes: number("MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES as u64, 1, 64 << 20)? as usize,
            warm_up: flag("WARM_UP"),
            json_logs: get("LOG_FORMAT").is_some_and(|v| v.eq_ignore_ascii_case("json")),
        })
    }
}

/// The SDK configuration every DynamoDB client here starts from: timeouts and a retry
/// budget that keep a request well inside API Gateway's 30 s (3 attempts, each at most
/// 3 s, the whole operation at most 10 s). `AWS_ENDPOINT_URL_DYNAMODB` points it at a
/// local server.
pub fn sdk_defaults() -> aws_config::ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(1))
                .operation_attempt_timeout(Duration::from_secs(3))
                .operation_timeout(Duration::from_secs(10))
                .build(),
        )
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(3)
                .with_initial_backoff(Duration::from_millis(50))
                .with_max_backoff(Duration::from_secs(1)),
        )
}

/// A DynamoDB client configured from the environment and [`sdk_defaults`].
pub async fn dynamodb_client() -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&sdk_defaults().load().await)
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
    }

    #[test]
    fn cache_lifetime_above_sixty_seconds_is_refused() {
        assert!(config(&[("DIRECTORY_CACHE_TTL_SECS", "61")]).is_err());
        assert!(config(&[("ID_BLOCK_SIZE", "zero")]).is_err());
        assert_eq!(config(&[("LOG_FORMAT", "JSON"), ("WARM_UP", "true")]).map(|c| (c.json_logs, c.warm_up)).unwrap(), (true, true));
    }
}
