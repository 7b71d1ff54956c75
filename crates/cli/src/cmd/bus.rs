//! `--bus`: which distribution backend carries the records, and the Zenoh endpoints.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use fastfeed_bus_zenoh::{ZenohBus, ZenohConfig};
use std::path::PathBuf;

/// A bus backend (`fastfeed_bus::Bus` implementation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BusKind {
    /// iceoryx2 shared memory: processes of this host, zero-copy.
    #[default]
    Shm,
    /// Zenoh over TCP: processes of this host or others (--connect, --listen).
    Zenoh,
}

impl BusKind {
    /// The flag's value, to pass on to child processes.
    pub fn name(self) -> String {
        self.to_possible_value()
            .expect("no variant is skipped")
            .get_name()
            .to_string()
    }
}

/// Where a Zenoh session listens and what it connects to (`--bus zenoh`).
#[derive(Args, Clone, Debug, Default)]
pub struct ZenohArgs {
    /// Zenoh: connect to this endpoint, e.g. tcp/10.0.0.1:7447 (repeatable).
    #[arg(long, value_name = "ENDPOINT")]
    pub connect: Vec<String>,
    /// Zenoh: listen on this endpoint, e.g. tcp/0.0.0.0:7447 (repeatable).
    #[arg(long, value_name = "ENDPOINT")]
    pub listen: Vec<String>,
    /// Zenoh: find peers by multicast scouting (on when neither --connect nor --listen).
    #[arg(long)]
    pub scout: bool,
    /// Zenoh: a Zenoh configuration file (JSON5: TLS, users, access control) applied first.
    #[arg(long, value_name = "FILE")]
    pub zenoh_config: Option<PathBuf>,
    /// Zenoh publishers wait when a link is congested instead of dropping for that link:
    /// recorders get every record, and a slow one slows the feed.
    #[arg(long)]
    pub block_when_congested: bool,
}

impl ZenohArgs {
    /// Opens the Zenoh session of `feed`.
    pub fn open(&self, feed: &str) -> Result<ZenohBus> {
        let config = ZenohConfig {
            file: self.zenoh_config.clone(),
            listen: self.listen.clone(),
            connect: self.connect.clone(),
            scouting: self.scout || (self.connect.is_empty() && self.listen.is_empty()),
            block_when_congested: self.block_when_congested,
        };
        ZenohBus::new(feed, config).context("opening the Zenoh session")
    }
}
