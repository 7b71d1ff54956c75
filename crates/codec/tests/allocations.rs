//! Zero heap allocations per message in steady state with the callback interface: a counting
//! allocator around the system one counts this thread's allocations while whole corpus
//! files are decoded. Counts are deterministic, unlike times.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use fastfeed_codec::{Decoder, FieldValue, Handler};

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

/// A handler that looks at every value, as an application would, without keeping any.
#[derive(Default)]
struct Touch {
    fields: u64,
    bytes: u64,
}

impl Handler for Touch {
    fn value(&mut self, _: &fastfeed_codec::template::Instr, v: FieldValue<'_>) {
        self.fields += 1;
        if let FieldValue::Ascii(b) | FieldValue::Bytes(b) = v {
            self.bytes += b.len() as u64;
        }
    }
}

fn shared(rel: &str) -> Vec<u8> {
    let path = format!("{}/../../../shared/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Decodes `packets` twice with one decoder: the first pass may grow buffers (string
/// scratch space, dictionary strings), the second must not allocate at all.
fn steady_state(xml: &str, packets: &[&[u8]]) -> (u64, u64) {
    let ts = fastfeed_codec::parse_templates(xml).unwrap();
    let mut dec = Decoder::new(ts);
    let mut h = Touch::default();
    let mut pass = |h: &mut Touch| {
        let mut messages = 0;
        for p in packets {
            dec.reset();
            let mut pos = 0;
            while pos < p.len() {
                pos += dec.decode(&p[pos..], h).unwrap();
                messages += 1;
            }
        }
        messages
    };
    pass(&mut h);
    let before = allocations();
    let messages = pass(&mut h);
    assert!(h.fields > messages, "the handler saw the fields");
    (messages, allocations() - before)
}

#[test]
fn the_counter_counts() {
    let before = allocations();
    let v: Vec<u8> = Vec::with_capacity(10);
    std::hint::black_box(&v);
    assert_eq!(allocations() - before, 1);
}

#[test]
fn mfast_complex_decodes_without_allocating() {
    let data = shared("corpus/mfast-complex/complex30000.dat");
    let mut packets = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let n = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        packets.push(&data[pos + 4..pos + 4 + n]);
        pos += 4 + n;
    }
    let xml = String::from_utf8(shared("corpus/mfast-complex/example.xml")).unwrap();
    let (messages, allocated) = steady_state(&xml, &packets);
    assert_eq!(messages, 30_001);
    assert_eq!(
        allocated, 0,
        "allocations while decoding {messages} messages"
    );
}

#[test]
fn moex_decodes_without_allocating() {
    let xml = String::from_utf8(shared("corpus/moex-forts-2013/templates.xml")).unwrap();
    for (file, expect) in [("increment_a.dat", 16_202), ("snapshot.dat", 0)] {
        let data = shared(&format!("corpus/moex-forts-2013/{file}"));
        let (messages, allocated) = steady_state(&xml, &[&data]);
        assert!(messages >= expect && messages > 1000, "{file}: {messages}");
        assert_eq!(allocated, 0, "{file}: allocations over {messages} messages");
    }
}

#[test]
fn openfast_fpl_decodes_without_allocating() {
    let xml = String::from_utf8(shared("corpus/openfast-fpl/FASTTestTemplate.xml")).unwrap();
    let data = shared("corpus/openfast-fpl/messages.fast");
    let (messages, allocated) = steady_state(&xml, &[&data]);
    assert_eq!(messages, 3);
    assert_eq!(allocated, 0);
}
