//! Finding the addresses of an endpoint's name, once per delivery: the sender checks every
//! address found, then connects to one of those very addresses (never resolving again, so
//! a name cannot answer one address to the check and another to the connection).

use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;

/// The addresses a name resolves to.
pub type Resolved<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Resolves names. The system's resolver in a function; tests answer from a table of their
/// own, so no test asks a real resolver nor reaches the address it answers.
pub trait Resolve: Send + Sync {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolved<'a>;
}

/// The system's resolver (`getaddrinfo`, on a blocking thread).
#[derive(Debug, Clone, Copy, Default)]
pub struct System;

impl Resolve for System {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolved<'a> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.map(|a| a.ip()).collect()) })
    }
}
