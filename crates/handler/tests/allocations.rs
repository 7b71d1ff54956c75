//! Zero heap allocations per packet in steady state: the whole path (arbitration, decode,
//! normalize, RptSeq check, book update, output) over lines A and B of the MOEX capture,
//! counted by a counting allocator once the channel has synchronized from snapshots.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::*;
use fastfeed_handler::source::merge;
use fastfeed_handler::{BookView, LineId, Output};

struct Counting;

thread_local! {
    // Const-initialised: touching it never allocates.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: defers every operation to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Looks at every book change's best levels, as a publisher would, keeping nothing.
#[derive(Default)]
struct Touch {
    books: u64,
    levels: u64,
}

impl Output for Touch {
    fn book(&mut self, v: &BookView<'_>) {
        self.books += 1;
        self.levels += (v.book.bids().len() + v.book.offers().len()) as u64;
    }
}

#[test]
fn the_whole_path_allocates_nothing_per_packet_in_steady_state() {
    let lines = [
        line(LineId::A, "increment_a.dat"),
        line(LineId::B, "increment_b.dat"),
        line(LineId::Snapshot, "snapshot.dat"),
    ];
    let mut order = merge(&lines);
    let mut ch = channel();
    let mut out = Touch::default();
    // Warm up: start-up synchronization from snapshots, buffers grown to their sizes. Both
    // lines deliver first copies here (B wins the ties in time), so both lines' decoders
    // have met every message kind: a copy taken from the other line is not decoded, and a
    // decoder's buffers grow on their first use.
    let warm = order.len() / 4;
    let ts = |&(l, i): &(usize, usize)| lines[l].packets[i].ts_ns;
    order[..warm].sort_by_key(|p| (ts(p), lines[p.0].line != LineId::B));
    for &(l, i) in &order[..warm] {
        ch.on_packet(
            lines[l].line,
            lines[l].packet(i),
            lines[l].packets[i].ts_ns,
            &mut out,
        );
    }
    assert!(!ch.wants_snapshots(), "synchronized during the warm-up");
    let before = allocations();
    let books_before = out.books;
    let mut packets = 0;
    for &(l, i) in &order[warm..] {
        ch.on_packet(
            lines[l].line,
            lines[l].packet(i),
            lines[l].packets[i].ts_ns,
            &mut out,
        );
        packets += 1;
    }
    let allocated = allocations() - before;
    let s = ch.stats();
    assert!(packets > 15_000, "{packets}");
    assert!(out.books - books_before > 5_000);
    assert_eq!((s.book_errors, s.went_stale), (0, 0));
    assert_eq!(
        allocated, 0,
        "{allocated} allocations over {packets} packets"
    );
}
