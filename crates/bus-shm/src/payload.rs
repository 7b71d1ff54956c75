//! What iceoryx2 carries: the interface's types, wrapped so that this crate may declare them
//! `ZeroCopySend` (Rust's orphan rule forbids implementing iceoryx2's trait for
//! fastfeed-bus's types directly).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use fastfeed_bus::{Envelope, Message, Record, ENVELOPE_VERSION};
use iceoryx2::prelude::ZeroCopySend;

/// An envelope in a shared-memory sample.
#[derive(Debug, Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Data<R>(pub Envelope<R>);

/// An echo or control message in a shared-memory sample.
#[derive(Debug, Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Aux<M>(pub M);

// SAFETY: `Data<R>` is `repr(transparent)` over `Envelope<R>`, which is `#[repr(C)]`: three
// `u64`, two `u32`, then `R`. `R: Record` requires zerocopy's `IntoBytes + FromBytes +
// Immutable`, which zerocopy's derives grant only to types that are plain bytes: no pointers,
// references or handles (none of those is `FromBytes`), no interior mutability, every bit
// pattern valid. So the envelope is self-contained and means the same in every process
// mapping the sample. Its layout is fixed by `repr(C)`; the type name carries the record's
// name, its layout version and the envelope's version, so a process with another layout fails
// to open the service instead of misreading it (iceoryx2 also compares size and alignment).
unsafe impl<R: Record> ZeroCopySend for Data<R> {
    unsafe fn type_name() -> &'static str {
        interned(R::TYPE_NAME, R::LAYOUT_VERSION, true)
    }
}

// SAFETY: as for `Data`: `Aux<M>` is `repr(transparent)` over `M`, and `M: Message` has the same
// zerocopy bounds as a record: `#[repr(C)]` plain bytes with no pointers or handles. The type
// name carries the message's name and layout version.
unsafe impl<M: Message> ZeroCopySend for Aux<M> {
    unsafe fn type_name() -> &'static str {
        interned(M::TYPE_NAME, M::LAYOUT_VERSION, false)
    }
}

/// `fastfeed::<name>@<version>[+envelope@<version>]`, made once per type and kept for the
/// process's life (iceoryx2 asks for a `&'static str`; a type's name is a few dozen bytes).
fn interned(name: &'static str, version: u16, envelope: bool) -> &'static str {
    type Names = HashMap<(&'static str, u16, bool), &'static str>;
    static NAMES: OnceLock<Mutex<Names>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    names.entry((name, version, envelope)).or_insert_with(|| {
        let s = if envelope {
            format!("fastfeed::{name}@{version}+envelope@{ENVELOPE_VERSION}")
        } else {
            format!("fastfeed::{name}@{version}")
        };
        Box::leak(s.into_boxed_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fastfeed_bus::testing::TestRecord;
    use fastfeed_bus::Echo;

    #[test]
    fn type_names_carry_the_layout_versions() {
        // SAFETY: `type_name` only builds a string.
        let (data, echo) = unsafe {
            (
                <Data<TestRecord> as ZeroCopySend>::type_name(),
                <Aux<Echo> as ZeroCopySend>::type_name(),
            )
        };
        assert_eq!(data, "fastfeed::testrecord@1+envelope@1");
        assert_eq!(echo, "fastfeed::echo@2");
        let again = unsafe { <Data<TestRecord> as ZeroCopySend>::type_name() };
        assert!(std::ptr::eq(data, again), "made once");
    }
}
