//! An integer's 7-bit groups gathered into its value. A present integer of up to eight
//! bytes is loaded as one word; its groups are then concatenated without a loop: a byte
//! swap and three merging steps, or one `pext` where the CPU has a fast one (BMI2).
//!
//! A build for BMI2 (`-C target-feature=+bmi2`) uses `pext` everywhere. A portable build
//! asks the CPU once at run time ([`fast_pext`]) and the integer runs of the generated
//! decoders (`primitives::Stops`) take `pext` where it is there and fast.

use std::sync::OnceLock;

/// Whether this process gathers groups with `pext`: built for BMI2, or running on a CPU
/// that has it and executes it in hardware (AMD before Zen 3, family 0x19, microcodes it:
/// tens of cycles, slower than the portable steps). `FASTFEED_PEXT=0` in the environment
/// turns it off (for comparisons in one binary). Asked once, then a load.
pub fn fast_pext() -> bool {
    static FAST: OnceLock<bool> = OnceLock::new();
    *FAST.get_or_init(|| std::env::var_os("FASTFEED_PEXT").is_none_or(|v| v != "0") && cpu_pext())
}

#[cfg(all(target_arch = "x86_64", target_feature = "bmi2"))]
fn cpu_pext() -> bool {
    true
}

#[cfg(all(target_arch = "x86_64", not(target_feature = "bmi2")))]
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

/// Whether a CPU with BMI2 runs `pext` in hardware, from its vendor and its signature
/// (cpuid leaf 1's EAX): all but AMD's before family 0x19 (Zen 3).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn pext_in_hardware(amd: bool, signature: u32) -> bool {
    let family = (signature >> 8 & 0xf) + (signature >> 20 & 0xff);
    !amd || family >= 0x19
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_pext() -> bool {
    false
}

/// The 7-bit groups of the first `n` (1..=8) bytes of `w` (first byte in the low bits)
/// concatenated, the first byte's group on top: a byte swap and three merging steps instead
/// of a loop over the bytes.
#[inline(always)]
pub(crate) fn concat_groups(w: u64, n: usize) -> u64 {
    // Built for BMI2 (`-C target-feature=+bmi2`, or a target CPU that has it): one
    // bit-extract gathers the groups (README, "A faster build for CPUs with BMI2").
    #[cfg(all(target_arch = "x86_64", target_feature = "bmi2"))]
    // SAFETY: this is compiled only where the build targets CPUs with BMI2 (the cfg above),
    // so the instruction exists wherever the binary may run; pext reads no memory.
    return unsafe {
        std::arch::x86_64::_pext_u64(w.swap_bytes() >> (64 - 8 * n), 0x7f7f_7f7f_7f7f_7f7f)
    };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "bmi2")))]
    concat_groups_portable(w, n)
}

/// [`concat_groups`] for the first `n` (1..=4) bytes of a 32-bit word.
#[inline(always)]
pub(crate) fn concat_groups4(w: u32, n: usize) -> u32 {
    // Built for BMI2, the one `pext` of the 64-bit path.
    #[cfg(all(target_arch = "x86_64", target_feature = "bmi2"))]
    return concat_groups(w as u64, n) as u32;
    #[cfg(not(all(target_arch = "x86_64", target_feature = "bmi2")))]
    concat_groups4_portable(w, n)
}

/// [`concat_groups`], with `pext` where `pext` is true: a value of [`fast_pext`], which
/// the caller keeps in a register (one predictable branch a field, against the seven
/// instructions `pext` saves).
#[inline(always)]
pub(crate) fn concat_groups_rt(w: u64, n: usize, pext: bool) -> u64 {
    #[cfg(all(target_arch = "x86_64", not(target_feature = "bmi2")))]
    if pext {
        return pext_run_time(w.swap_bytes() >> (64 - 8 * n), 0x7f7f_7f7f_7f7f_7f7f);
    }
    let _ = pext;
    concat_groups(w, n)
}

/// [`concat_groups4`], with `pext` where `pext` is true (see [`concat_groups_rt`]).
#[inline(always)]
pub(crate) fn concat_groups4_rt(w: u32, n: usize, pext: bool) -> u32 {
    #[cfg(all(target_arch = "x86_64", not(target_feature = "bmi2")))]
    if pext {
        return pext_run_time(w.swap_bytes() as u64 >> (32 - 8 * n), 0x7f7f_7f7f) as u32;
    }
    let _ = pext;
    concat_groups4(w, n)
}

/// `pext` in a build that does not target BMI2, as inline assembly: the intrinsic would
/// stay an out-of-line call here (its target feature is not the caller's).
#[cfg(all(target_arch = "x86_64", not(target_feature = "bmi2")))]
#[inline(always)]
fn pext_run_time(x: u64, mask: u64) -> u64 {
    let out: u64;
    // SAFETY: reached only where `pext` is true, a value of `fast_pext`, which is true
    // only where the CPU reports BMI2 (`is_x86_feature_detected!`), so the instruction
    // exists; it reads and writes registers only (nomem, nostack).
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

#[cfg_attr(all(target_arch = "x86_64", target_feature = "bmi2"), allow(dead_code))]
#[inline(always)]
pub(crate) fn concat_groups4_portable(w: u32, n: usize) -> u32 {
    let x = (w & 0x7f7f_7f7f).swap_bytes() >> (32 - 8 * n);
    let x = x - ((x & 0x7f00_7f00) >> 1);
    (x & 0x3fff) | ((x & 0x3fff_0000) >> 2)
}

// Built for BMI2, only the tests call it (against the pext path).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "bmi2"), allow(dead_code))]
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

    /// Every way of gathering agrees with a loop over the bytes: the build's, the portable
    /// steps, and the run-time selection both ways (`pext` where this CPU has it).
    #[test]
    fn groups_concatenate_as_a_loop_would() {
        let mut rng = xorshift(0x9e37_79b9_7f4a_7c15);
        let pext = fast_pext();
        for _ in 0..1000 {
            let x = rng();
            for n in 1..=8 {
                let want = (0..n).fold(0u64, |acc, i| (acc << 7) | ((x >> (8 * i)) & 0x7f));
                assert_eq!(concat_groups(x, n), want, "{x:x} {n}");
                assert_eq!(concat_groups_portable(x, n), want, "{x:x} {n}");
                assert_eq!(concat_groups_rt(x, n, pext), want, "{x:x} {n}");
                assert_eq!(concat_groups_rt(x, n, false), want, "{x:x} {n}");
                if n <= 4 {
                    let w = x as u32;
                    assert_eq!(concat_groups4(w, n) as u64, want, "{x:x} {n}");
                    assert_eq!(concat_groups4_portable(w, n) as u64, want, "{x:x} {n}");
                    assert_eq!(concat_groups4_rt(w, n, pext) as u64, want, "{x:x} {n}");
                    assert_eq!(concat_groups4_rt(w, n, false) as u64, want, "{x:x} {n}");
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
