//! What a function instance holds across requests: configuration and the two tables.

use std::time::Duration;

use crate::config::{self, Config, ConfigError};
use crate::directory::Directory;
use crate::store::Store;

/// Built once per instance, in `main`, and passed to every request.
#[derive(Debug)]
pub struct App {
    pub config: Config,
    pub store: Store,
    pub directory: Directory,
}

impl App {
    /// An instance over an existing DynamoDB client.
    pub fn new(config: Config, client: aws_sdk_dynamodb::Client) -> Self {
        App {
            store: Store::new(client.clone(), config.calls_table.clone(), config.id_block_size),
            directory: Directory::new(client, config.directory_table.clone(), config.cache_ttl),
            config,
        }
    }

    /// Reads the environment, starts logging, builds the client, and warms the
    /// connection up when `WARM_UP` is on.
    pub async fn from_env() -> Result<App, ConfigError> {
        let config = Config::from_env()?;
        super::logging::init(config.json_logs);
        let app = App::new(config, config::dynamodb_client_from_env()?);
        if app.config.warm_up {
            app.warm_up().await;
        }
        Ok(app)
    }

    /// Opens the DynamoDB connection (DNS, TLS) during init, where Lambda gives full CPU,
    /// so the first request does not pay for it. Bounded and never fatal.
    pub async fn warm_up(&self) {
        let read = self.directory.lookup("warm-up", None);
        match tokio::time::timeout(Duration::from_secs(2), read).await {
            Ok(Ok(_)) => tracing::debug!("warm-up done"),
            Ok(Err(e)) => tracing::warn!(error = %e, "warm-up failed"),
            Err(_) => tracing::warn!("warm-up timed out"),
        }
    }
}
