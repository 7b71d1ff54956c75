//! Once the ports exist, receiving allocates nothing per record, and publishing only what
//! iceoryx2 itself allocates per loaned sample: a counting allocator watches this thread while
//! records go through shared memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use fastfeed_bus::testing::{record, TestRecord};
use fastfeed_bus::{Bus, Publisher, PublisherQos, Securities, Subscriber, SubscriberQos};
use fastfeed_bus_shm::ShmBus;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

#[test]
fn no_allocation_per_record_but_iceoryx2s_own() {
    let bus = ShmBus::new(&format!("t{}-alloc", std::process::id())).unwrap();
    let mut sub = bus
        .subscriber::<TestRecord>(Securities::Only(vec![1, 2, 3]), &SubscriberQos::default())
        .unwrap();
    let mut publisher = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    // Every security once first: the per-security numbering grows to hold them.
    for i in 0..10 {
        publisher.publish(&record(i)).unwrap();
    }
    while sub.try_recv().unwrap().is_some() {}
    let (mut publishing, mut receiving, mut got) = (0, 0, 0);
    for i in 10..2010 {
        let a = allocs();
        publisher.publish(&record(i)).unwrap();
        let b = allocs();
        while sub.try_recv().unwrap().is_some() {
            got += 1;
        }
        publishing += b - a;
        receiving += allocs() - b;
    }
    assert_eq!(got, 600);
    assert_eq!(
        receiving, 0,
        "receiving 2000 records (600 kept, 1400 filtered out)"
    );
    // iceoryx2 0.10 makes one reference-counted state per loaned sample
    // (`ChunkMutSharedState::new`); nothing of ours may add to it.
    assert!(publishing <= 2000, "publishing 2000 records: {publishing}");
}
