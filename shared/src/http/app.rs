//! What a function instance holds across requests: configuration and the two tables.

use std::sync::OnceLock;
use std::time::Duration;

use crate::config::{Config, ConfigError, EnvClient};
use crate::directory::Directory;
use crate::store::Store;

/// Built once per instance, in `main`, and passed to every request.
pub struct App {
    pub config: Config,
    tables: OnceLock<Tables>,
    client: Source,
}

struct Tables {
    store: Store,
    directory: Directory,
}

/// Where the DynamoDB client comes from.
enum Source {
    Ready(aws_sdk_dynamodb::Client),
    /// Settings read from the environment at start-up; the client (and its TLS trust
    /// store, a few milliseconds of certificate parsing) is built on first use.
    Env(EnvClient),
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").field("config", &self.config).finish_non_exhaustive()
    }
}

impl App {
    /// An instance over an existing DynamoDB client.
    pub fn new(config: Config, client: aws_sdk_dynamodb::Client) -> Self {
        App { config, tables: OnceLock::new(), client: Source::Ready(client) }
    }

    /// Reads and checks the environment and starts logging. The DynamoDB client is built
    /// on first use, or here when `WARM_UP` is on, which also opens its connection (during
    /// Lambda's init, where the CPU is not throttled).
    pub async fn from_env() -> Result<App, ConfigError> {
        let config = Config::from_env()?;
        super::logging::init(config.json_logs);
        let app = App { config, tables: OnceLock::new(), client: Source::Env(EnvClient::from_env()?) };
        if app.config.warm_up {
            app.warm_up().await;
        }
        Ok(app)
    }

    fn tables(&self) -> &Tables {
        self.tables.get_or_init(|| {
            let client = match &self.client {
                Source::Ready(client) => client.clone(),
                Source::Env(env) => env.client(),
            };
            Tables {
                store: Store::new(client.clone(), self.config.calls_table.clone(), self.config.id_block_size),
                directory: Directory::new(client, self.config.directory_table.clone(), self.config.cache_ttl),
            }
        })
    }

    /// The Calls table.
    pub fn store(&self) -> &Store {
        &self.tables().store
    }

    /// The Directory table.
    pub fn directory(&self) -> &Directory {
        &self.tables().directory
    }

    /// Opens the DynamoDB connection (DNS, TLS) so the first request does not pay for it.
    /// Bounded and never fatal.
    pub async fn warm_up(&self) {
        let read = self.directory().lookup("warm-up", None);
        match tokio::time::timeout(Duration::from_secs(2), read).await {
            Ok(Ok(_)) => tracing::debug!("warm-up done"),
            Ok(Err(e)) => tracing::warn!(error = %e, "warm-up failed"),
            Err(_) => tracing::warn!("warm-up timed out"),
        }
    }
}
