//! `--bus`: which distribution backend carries the records.

use clap::ValueEnum;

/// A bus backend (`fastfeed_bus::Bus` implementation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BusKind {
    /// iceoryx2 shared memory: processes of this host, zero-copy.
    #[default]
    Shm,
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
