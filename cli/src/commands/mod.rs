//! One module per noun of the command line: its clap subcommands and how they run against
//! the tables.

pub mod agent;
pub mod call;
pub mod deliveries;
pub mod endpoint;
pub mod key;
pub mod session;
pub mod tables;
pub mod traces;
pub mod webhook;
pub mod workspace;
