//! Echo subscriber: receives `TestRecord`s of a feed and echoes each one back so
//! the publisher can measure round-trip latency. Exits after the publisher's Done
//! (or 10 s without data) and prints its counters.
//!
//! Usage: `cargo run -p fastfeed-bus-shm --example echo -- <feed> [security,...]`

use fastfeed_bus::testing::TestRecord;
use fastfeed_bus::{serve_echo, Securities};
use fastfeed_bus_shm::ShmBus;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let feed = args.next().ok_or("usage: echo <feed> [security,...]")?;
    let securities = match args.next() {
        None => Securities::All,
        Some(list) => Securities::Only(
            list.split(',')
                .map(str::parse)
                .collect::<Result<Vec<u32>, _>>()?,
        ),
    };
    let bus = ShmBus::new(&feed)?;
    eprintln!(
        "echo: feed {feed}, {securities:?}, cleaned {} dead nodes",
        bus.dead_nodes_cleaned()
    );
    let stats = serve_echo::<_, TestRecord>(
        &bus,
        securities,
        std::process::id(),
        Duration::from_secs(10),
    )?;
    println!("{stats:?}");
    if stats.complete {
        Ok(())
    } else {
        Err("publisher's Done not received or data incomplete".into())
    }
}
