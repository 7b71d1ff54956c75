//! The transfer-encoding primitives, each over a buffer of 4,096 encoded values of mixed
//! sizes: stop-bit integers, presence maps, ASCII strings, decimals.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use fastfeed_codec::primitives as p;

const N: usize = 4096;

/// Stop-bit encoding of `v` in `n` 7-bit groups.
fn groups(out: &mut Vec<u8>, v: u64, n: usize) {
    for i in (0..n).rev() {
        out.push(((v >> (7 * i)) & 0x7f) as u8);
    }
    *out.last_mut().unwrap() |= 0x80;
}

/// A repeatable mix of sizes: mostly 1-3 bytes, as in market data, some up to 9.
fn sizes() -> impl Iterator<Item = usize> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        [1, 1, 2, 2, 3, 3, 4, 9][(x % 8) as usize]
    })
}

fn unsigned_buf() -> Vec<u8> {
    let mut b = Vec::new();
    for (i, n) in sizes().take(N).enumerate() {
        groups(
            &mut b,
            (i as u64 * 2_654_435_761) & ((1u64 << (7 * n - 1)) - 1),
            n,
        );
    }
    b
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("primitives");
    g.throughput(Throughput::Elements(N as u64));

    let ints = unsigned_buf();
    g.bench_function("u64 stop-bit", |b| {
        b.iter(|| {
            let (mut pos, mut sum) = (0, 0u64);
            while pos < ints.len() {
                sum = sum.wrapping_add(p::u64(&ints, &mut pos).unwrap());
            }
            black_box(sum)
        })
    });
    g.bench_function("i64 stop-bit", |b| {
        b.iter(|| {
            let (mut pos, mut sum) = (0, 0i64);
            while pos < ints.len() {
                sum = sum.wrapping_add(p::i64(&ints, &mut pos).unwrap());
            }
            black_box(sum)
        })
    });
    g.bench_function("nullable u64", |b| {
        b.iter(|| {
            let (mut pos, mut n) = (0, 0u64);
            while pos < ints.len() {
                n += p::nullable_u64(&ints, &mut pos).unwrap().is_some() as u64;
            }
            black_box(n)
        })
    });

    // Presence maps of 1-3 bytes, 14 bits walked each.
    let mut pmaps = Vec::new();
    for (i, n) in sizes().take(N).enumerate() {
        groups(&mut pmaps, i as u64 * 0x5bd1e995, n.min(3));
    }
    g.bench_function("presence map", |b| {
        b.iter(|| {
            let (mut pos, mut set) = (0, 0u32);
            while pos < pmaps.len() {
                set += p::pmap(&pmaps, &mut pos, 14).unwrap();
            }
            black_box(set)
        })
    });

    // ASCII strings of 1-12 characters.
    let mut strings = Vec::new();
    for (i, n) in sizes().take(N).enumerate() {
        let len = n + i % 4;
        strings.extend((0..len).map(|k| b'A' + ((i + k) % 26) as u8));
        *strings.last_mut().unwrap() |= 0x80;
    }
    let mut out = Vec::with_capacity(64);
    g.bench_function("ascii string", |b| {
        b.iter(|| {
            let (mut pos, mut total) = (0, 0usize);
            while pos < strings.len() {
                p::ascii_into(&strings, &mut pos, false, &mut out).unwrap();
                total += out.len();
            }
            black_box(total)
        })
    });

    // Decimals: a one-byte exponent and a 1-4 byte mantissa.
    let mut decimals = Vec::new();
    for (i, n) in sizes().take(N).enumerate() {
        decimals.push(0x80 | (0x7e - (i % 4) as u8));
        groups(
            &mut decimals,
            (i as u64 * 7919) & ((1u64 << (7 * n.min(4) - 1)) - 1),
            n.min(4),
        );
    }
    g.bench_function("decimal", |b| {
        b.iter(|| {
            let (mut pos, mut sum) = (0, 0i64);
            while pos < decimals.len() {
                sum = sum.wrapping_add(p::decimal_at(&decimals, &mut pos).unwrap().mantissa);
            }
            black_box(sum)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
