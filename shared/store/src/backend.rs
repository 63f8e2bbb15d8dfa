//! What a function instance (or `callctl`) holds across requests: configuration and the two
//! tables.

use std::sync::OnceLock;
use std::time::Duration;

use crate::calls::Store;
use crate::config::{Config, ConfigError, EnvClient};
use crate::directory::Directory;

/// Built once per instance, in `main`, and passed to every request.
pub struct Backend {
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

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Backend {
    /// An instance over an existing DynamoDB client.
    pub fn new(config: Config, client: aws_sdk_dynamodb::Client) -> Self {
        Backend { config, tables: OnceLock::new(), client: Source::Ready(client) }
    }

    /// An instance over `config`, with the client's settings read from the environment. The
    /// DynamoDB client is built on first use (or by [`Backend::warm_up`]).
    pub fn from_env(config: Config) -> Result<Backend, ConfigError> {
        Ok(Backend { config, tables: OnceLock::new(), client: Source::Env(EnvClient::from_env()?) })
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
