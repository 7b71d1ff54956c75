//! What the decoder dispatches on: each instruction's type, operator and presence folded into
//! one [`Code`] at compile time, with the operands (dictionary slot, range, initial value)
//! laid out flat beside it. Decoding a field then takes one jump instead of three nested
//! matches, and the arm it lands on is specialised for exactly that combination.

use super::model::{FieldType, Initial, IntType, Kind, Op, Scalar};

/// Operator numbers, for const generic parameters.
pub(crate) const NONE: u8 = 0;
pub(crate) const CONSTANT: u8 = 1;
pub(crate) const DEFAULT: u8 = 2;
pub(crate) const COPY: u8 = 3;
pub(crate) const INCREMENT: u8 = 4;
pub(crate) const DELTA: u8 = 5;

/// Declares [`Code`] and [`Code::ALL`] from one list, so the two cannot drift apart.
macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// The decoder's dispatch code. Names read class, operator, presence: `UCopyO` is an
        /// optional unsigned integer under copy. `Generic` takes the general path, which
        /// handles every instruction; the others are the combinations real templates use
        /// most.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub(crate) enum Code {
            $($(#[$doc])* $name,)*
        }

        impl Code {
            /// Every code, in declaration order: `ALL[c as usize] == c`.
            pub const ALL: &'static [Code] = &[$(Code::$name,)*];
        }
    };
}

codes! {
    Generic,
    UNoneM, UNoneO, UConstM, UConstO, UDefaultM, UDefaultO,
    UCopyM, UCopyO, UIncrM, UIncrO, UDeltaM, UDeltaO,
    INoneM, INoneO, IConstM, IConstO, IDefaultM, IDefaultO,
    ICopyM, ICopyO, IIncrM, IIncrO, IDeltaM, IDeltaO,
    DNoneM, DNoneO, DConstM, DConstO, DDefaultM, DDefaultO,
    DCopyM, DCopyO, DDeltaM, DDeltaO,
    /// A decimal whose exponent has the default operator and whose mantissa has delta (the
    /// usual shape of prices in CME-style templates).
    SplitDefaultDeltaM,
    SplitDefaultDeltaO,
    ANoneM, ANoneO, AConstM, AConstO, ADefaultM, ADefaultO,
    ACopyM, ACopyO, ATailM, ATailO, ADeltaM, ADeltaO,
    /// A sequence whose length field has no operator and is mandatory.
    SequencePlain,
}

/// The flat parameters of one dictionary-backed value.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Operand {
    pub slot: u32,
    /// The type's range, as integer bits: `lo` the smallest value (signed), `hi` the largest
    /// (a signed type's maximum is positive, so it fits either way).
    pub lo: i64,
    pub hi: u64,
    /// The initial value: integer bits or a decimal's exponent, and a decimal's mantissa.
    pub init: u64,
    pub init_mantissa: i64,
    pub has_init: bool,
}

impl Operand {
    fn of(s: &Scalar, it: IntType) -> Operand {
        let (init, init_mantissa, has_init) = match &s.initial {
            Some(Initial::Int(v)) => (*v, 0, true),
            Some(Initial::Decimal { exponent, mantissa }) => {
                (*exponent as i64 as u64, *mantissa, true)
            }
            Some(Initial::Bytes(_)) => (0, 0, true),
            None => (0, 0, false),
        };
        Operand {
            slot: s.slot,
            lo: it.min() as i64,
            hi: it.max() as u64,
            init,
            init_mantissa,
            has_init,
        }
    }

    /// Plus one, the type's maximum wrapping to its minimum (spec §6.3.6).
    #[inline(always)]
    pub fn increment(&self, v: u64) -> u64 {
        increment_bits(v, self.lo, self.hi)
    }
}

/// An instruction's dispatch code and operands: `a` is the field (or a split decimal's
/// exponent, or a sequence's length), `b` a split decimal's mantissa.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Compiled {
    pub code: Code,
    pub a: Operand,
    pub b: Operand,
}

impl Compiled {
    pub fn of(kind: &Kind) -> Compiled {
        let mut c = Compiled {
            code: Code::Generic,
            a: Operand::default(),
            b: Operand::default(),
        };
        match kind {
            Kind::Scalar(s) => {
                c.code = scalar_code(s);
                let it = match s.ty {
                    FieldType::Int(it) => it,
                    _ => IntType::I64,
                };
                c.a = Operand::of(s, it);
            }
            Kind::SplitDecimal { exponent, mantissa } => {
                if exponent.op == Op::Default
                    && mantissa.op == Op::Delta
                    && !mantissa.optional
                    && !mantissa.typed_entry
                {
                    c.code = if exponent.optional {
                        Code::SplitDefaultDeltaO
                    } else {
                        Code::SplitDefaultDeltaM
                    };
                }
                c.a = Operand::of(exponent, IntType::I32);
                c.b = Operand::of(mantissa, IntType::I64);
            }
            Kind::Sequence { length, .. } => {
                if length.op == Op::None && !length.optional {
                    c.code = Code::SequencePlain;
                }
                c.a = Operand::of(length, IntType::U32);
            }
            Kind::Group(_) | Kind::DynamicRef => {}
        }
        c
    }
}

fn scalar_code(s: &Scalar) -> Code {
    use Code::*;
    let pick = |m: Code, o: Code| if s.optional { o } else { m };
    if s.typed_entry {
        return Generic;
    }
    match (s.ty, s.op) {
        (FieldType::Int(it), op) if !it.signed() => match op {
            Op::None => pick(UNoneM, UNoneO),
            Op::Constant => pick(UConstM, UConstO),
            Op::Default => pick(UDefaultM, UDefaultO),
            Op::Copy => pick(UCopyM, UCopyO),
            Op::Increment => pick(UIncrM, UIncrO),
            Op::Delta => pick(UDeltaM, UDeltaO),
            Op::Tail => Generic,
        },
        (FieldType::Int(_), op) => match op {
            Op::None => pick(INoneM, INoneO),
            Op::Constant => pick(IConstM, IConstO),
            Op::Default => pick(IDefaultM, IDefaultO),
            Op::Copy => pick(ICopyM, ICopyO),
            Op::Increment => pick(IIncrM, IIncrO),
            Op::Delta => pick(IDeltaM, IDeltaO),
            Op::Tail => Generic,
        },
        (FieldType::Decimal, op) => match op {
            Op::None => pick(DNoneM, DNoneO),
            Op::Constant => pick(DConstM, DConstO),
            Op::Default => pick(DDefaultM, DDefaultO),
            Op::Copy => pick(DCopyM, DCopyO),
            Op::Delta => pick(DDeltaM, DDeltaO),
            Op::Increment | Op::Tail => Generic,
        },
        (FieldType::Ascii, op) => match op {
            Op::None => pick(ANoneM, ANoneO),
            Op::Constant => pick(AConstM, AConstO),
            Op::Default => pick(ADefaultM, ADefaultO),
            Op::Copy => pick(ACopyM, ACopyO),
            Op::Tail => pick(ATailM, ATailO),
            Op::Delta => pick(ADeltaM, ADeltaO),
            Op::Increment => Generic,
        },
        (FieldType::Unicode | FieldType::Bytes, _) => Generic,
    }
}

/// The templates with every dispatch code forced to `Generic`: what the specialised arms are
/// tested against.
#[cfg(test)]
#[test]
fn all_lists_every_code_in_order() {
    for (i, c) in Code::ALL.iter().enumerate() {
        assert_eq!(*c as usize, i);
    }
}

#[cfg(test)]
pub(crate) fn generic_copy(ts: &super::Templates) -> std::sync::Arc<super::Templates> {
    fn all_generic(seg: &mut super::Segment) {
        for i in &mut seg.instrs {
            i.compiled.code = Code::Generic;
            match &mut i.kind {
                Kind::Sequence { body, .. } | Kind::Group(body) => all_generic(body),
                _ => {}
            }
        }
    }
    let mut g = ts.clone();
    for t in &mut g.list {
        all_generic(&mut t.body);
    }
    std::sync::Arc::new(g)
}

/// The increment operator's step on integer bits (signed values as `i64 as u64`): plus one,
/// the type's maximum `hi` wrapping to its minimum `lo` (spec §6.3.6).
#[inline(always)]
pub(crate) fn increment_bits(v: u64, lo: i64, hi: u64) -> u64 {
    if v == hi {
        lo as u64
    } else {
        v.wrapping_add(1)
    }
}
