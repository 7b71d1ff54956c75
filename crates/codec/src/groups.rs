//! An integer's 7-bit groups gathered into its value. A present integer of up to eight
//! bytes is loaded as one word; its groups are then concatenated without a loop: a byte
//! swap and three merging steps, or one `pext` where the CPU has a fast one (BMI2).
//!
//! A build for BMI2 (`-C target-feature=+bmi2`) always uses `pext`. A portable build asks the
//! CPU once at run time ([`fast_pext`]); readers carry the answer as a flag, the `pext`
//! argument of [`concat_groups`] and [`concat_groups4`].

use std::sync::atomic::{AtomicU8, Ordering};

/// Built for BMI2: `pext` is there wherever the binary runs.
const BUILT_FOR_BMI2: bool = cfg!(all(target_arch = "x86_64", target_feature = "bmi2"));

/// Whether this process gathers groups with `pext`: built for BMI2, or running on a CPU
/// that has it and executes it in hardware (AMD before Zen 3, family 0x19, microcodes it:
/// tens of cycles, slower than the portable steps). In a portable build `FASTFEED_PEXT=0` in
/// the environment turns it off (for comparisons in one binary); a build for BMI2 uses `pext`
/// whatever it says, and answers so. Asked once, then a load and a compare: a generated
/// decoder asks for every message (a `OnceLock` took eight instructions of the simple data's
/// 420 a message). Threads that race the first call both ask the CPU, and agree.
#[inline]
pub fn fast_pext() -> bool {
    // 0: not asked yet; 1: no; 2: yes.
    static FAST: AtomicU8 = AtomicU8::new(0);
    if BUILT_FOR_BMI2 {
        return true;
    }
    match FAST.load(Ordering::Relaxed) {
        0 => {
            let yes = ask_pext();
            FAST.store(1 + yes as u8, Ordering::Relaxed);
            yes
        }
        known => known == 2,
    }
}

#[cold]
fn ask_pext() -> bool {
    std::env::var_os("FASTFEED_PEXT").is_none_or(|v| v != "0") && cpu_pext()
}

#[cfg(target_arch = "x86_64")]
fn cpu_pext() -> bool {
    use std::arch::x86_64::__cpuid;
    if !std::is_x86_feature_detected!("bmi2") {
        return false;
    }
    // cpuid is on every x86-64 CPU (safe since Rust 1.87); leaves 0 and 1 always answer.
    let (vendor, sig) = (__cpuid(0), __cpuid(1));
    // "AuthenticAMD" in EBX, EDX, ECX.
    let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
    pext_in_hardware(amd, sig.eax)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_pext() -> bool {
    false
}

/// Whether a CPU with BMI2 runs `pext` in hardware, from its vendor and its signature
/// (cpuid leaf 1's EAX): all but AMD's before family 0x19 (Zen 3).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn pext_in_hardware(amd: bool, signature: u32) -> bool {
    let family = (signature >> 8 & 0xf) + (signature >> 20 & 0xff);
    !amd || family >= 0x19
}

/// The 7-bit groups of the first `n` (1..=8) bytes of `w` (first byte in the low bits)
/// concatenated, the first byte's group on top: one `pext` where `pext` (a value of
/// [`fast_pext`], kept by the caller in a register: one predictable branch a value) or the
/// build says so, else a byte swap and three merging steps.
#[inline(always)]
pub(crate) fn concat_groups(w: u64, n: usize, pext: bool) -> u64 {
    if BUILT_FOR_BMI2 || pext {
        return pext64(w.swap_bytes() >> (64 - 8 * n), 0x7f7f_7f7f_7f7f_7f7f);
    }
    concat_groups_portable(w, n)
}

/// [`concat_groups`] for the first `n` (1..=4) bytes of a 32-bit word.
#[inline(always)]
pub(crate) fn concat_groups4(w: u32, n: usize, pext: bool) -> u32 {
    if BUILT_FOR_BMI2 || pext {
        return pext64(w.swap_bytes() as u64 >> (32 - 8 * n), 0x7f7f_7f7f) as u32;
    }
    concat_groups4_portable(w, n)
}

/// `pext` built for BMI2: the intrinsic, which the optimiser sees through.
#[cfg(all(target_arch = "x86_64", target_feature = "bmi2"))]
#[inline(always)]
fn pext64(x: u64, mask: u64) -> u64 {
    // SAFETY: this is compiled only where the build targets CPUs with BMI2 (the cfg above),
    // so the instruction exists wherever the binary may run; pext reads no memory.
    unsafe { std::arch::x86_64::_pext_u64(x, mask) }
}

/// `pext` in a build that does not target BMI2, as inline assembly: the intrinsic would
/// stay an out-of-line call here (its target feature is not the caller's).
#[cfg(all(target_arch = "x86_64", not(target_feature = "bmi2")))]
#[inline(always)]
fn pext64(x: u64, mask: u64) -> u64 {
    let out: u64;
    // SAFETY: reached only where the caller's `pext` is true, a value of `fast_pext`, which
    // is true only where the CPU reports BMI2 (`is_x86_feature_detected!`), so the
    // instruction exists; it reads and writes registers only (nomem, nostack).
    unsafe {
        std::arch::asm!(
            "pext {out}, {x}, {mask}",
            out = lateout(reg) out,
            x = in(reg) x,
            mask = in(reg) mask,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    out
}

/// Off x86-64 `fast_pext` is false and this is never reached: the bits one by one.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn pext64(x: u64, mask: u64) -> u64 {
    (0..64)
        .filter(|i| mask >> i & 1 != 0)
        .enumerate()
        .fold(0, |acc, (k, i)| acc | (x >> i & 1) << k)
}

#[inline(always)]
pub(crate) fn concat_groups4_portable(w: u32, n: usize) -> u32 {
    let x = (w & 0x7f7f_7f7f).swap_bytes() >> (32 - 8 * n);
    let x = x - ((x & 0x7f00_7f00) >> 1);
    (x & 0x3fff) | ((x & 0x3fff_0000) >> 2)
}

#[inline(always)]
pub(crate) fn concat_groups_portable(w: u64, n: usize) -> u64 {
    let x = (w & 0x7f7f_7f7f_7f7f_7f7f).swap_bytes() >> (64 - 8 * n);
    // Pairs of bytes: `hi << 8 + lo` less half of `hi << 8` is `hi << 7 + lo`, one mask
    // where the merge below takes two (64-bit constants, materialised at every read).
    let x = x - ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::xorshift;

    /// Every way of gathering agrees with a loop over the bytes: the portable steps, and the
    /// selection both ways (`pext` where this CPU or the build has it).
    #[test]
    fn groups_concatenate_as_a_loop_would() {
        let mut rng = xorshift(0x9e37_79b9_7f4a_7c15);
        let pext = fast_pext();
        for _ in 0..1000 {
            let x = rng();
            for n in 1..=8 {
                let want = (0..n).fold(0u64, |acc, i| (acc << 7) | ((x >> (8 * i)) & 0x7f));
                assert_eq!(concat_groups_portable(x, n), want, "{x:x} {n}");
                assert_eq!(concat_groups(x, n, pext), want, "{x:x} {n}");
                assert_eq!(concat_groups(x, n, false), want, "{x:x} {n}");
                if n <= 4 {
                    let w = x as u32;
                    assert_eq!(concat_groups4_portable(w, n) as u64, want, "{x:x} {n}");
                    assert_eq!(concat_groups4(w, n, pext) as u64, want, "{x:x} {n}");
                    assert_eq!(concat_groups4(w, n, false) as u64, want, "{x:x} {n}");
                }
            }
        }
    }

    /// AMD's microcoded `pext` (Zen 1 and 2, family 0x17) is left out; Zen 3 on (0x19,
    /// 0x1a) and Intel are taken.
    #[test]
    fn microcoded_pext_is_left_out() {
        let amd = |family: u32| {
            let (base, ext) = if family > 0xf {
                (0xf, family - 0xf)
            } else {
                (family, 0)
            };
            base << 8 | ext << 20
        };
        assert!(!pext_in_hardware(true, amd(0x17)));
        assert!(!pext_in_hardware(true, amd(0x15)));
        assert!(pext_in_hardware(true, amd(0x19)));
        assert!(pext_in_hardware(true, amd(0x1a)));
        // Intel: family 6, whatever the model.
        assert!(pext_in_hardware(false, 0x0005_06f0 | 6 << 8));
    }
}
