//! Typed errors. Every error carries the FAST specification code where one applies, so an
//! operator reading a log can look the rule up in the spec.

use std::fmt;

/// The error codes of the FAST 1.1 specification (static S*, dynamic D*, reportable R*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecCode {
    S1,
    S2,
    S3,
    S4,
    S5,
    D1,
    D2,
    D3,
    D4,
    D5,
    D6,
    D7,
    D8,
    D9,
    D10,
    D11,
    D12,
    R1,
    R2,
    R3,
    R4,
    R5,
    R6,
    R7,
    R8,
    R9,
}

impl fmt::Display for SpecCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What went wrong while decoding or encoding a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error("the input ends in the middle of a message")]
    Truncated,
    #[error("integer does not fit its type")]
    IntegerOverflow,
    #[error("delta or increment result does not fit the field's type")]
    DeltaOverflow,
    #[error("overlong integer (more bytes than the value needs)")]
    OverlongInteger,
    #[error("overlong presence map")]
    OverlongPresenceMap,
    #[error("presence map has more bits set than the fields use")]
    PresenceMapTooLong,
    #[error("overlong string")]
    OverlongString,
    #[error("unknown template id {0}")]
    UnknownTemplate(u32),
    #[error("no template id in the stream and none to copy")]
    NoTemplateId,
    #[error("mandatory field has no value: undefined dictionary entry and no initial value")]
    MissingValue,
    #[error("mandatory field has no value: the dictionary entry is empty")]
    EmptyPrevious,
    /// Encoding: the message gives no value for a mandatory field (a constant included).
    #[error("mandatory field has no value in the message to encode")]
    NoValueGiven,
    #[error("subtraction length {0} is larger than the base value or out of range")]
    BadSubtraction(i64),
    #[error("decimal exponent {0} is outside -63 to 63")]
    ExponentRange(i64),
    #[error("decimal mantissa is out of range")]
    MantissaRange,
    #[error("unicode string is not valid UTF-8")]
    InvalidUtf8,
    #[error("sequence length {0} exceeds the limit")]
    SequenceTooLong(u64),
    #[error("string or byte vector of {0} bytes exceeds the limit")]
    LengthTooLong(u64),
    #[error("dynamic template references nested deeper than {0}")]
    TooDeep(u32),
    #[error("message longer than the limit of {0} bytes")]
    MessageTooLong(usize),
    #[error("value does not match the field's type")]
    TypeMismatch,
    #[error("value differs from the constant in the template")]
    ConstantMismatch,
}

impl ErrorKind {
    /// The spec code this kind maps to, if the spec names one.
    pub fn spec_code(&self) -> Option<SpecCode> {
        use ErrorKind::*;
        Some(match self {
            Truncated | SequenceTooLong(_) | LengthTooLong(_) | TooDeep(_) | MessageTooLong(_)
            | NoValueGiven => return None,
            IntegerOverflow => SpecCode::D2,
            DeltaOverflow => SpecCode::R4,
            OverlongInteger => SpecCode::R6,
            OverlongPresenceMap => SpecCode::R7,
            PresenceMapTooLong => SpecCode::R8,
            OverlongString => SpecCode::R9,
            UnknownTemplate(_) => SpecCode::D9,
            // The template identifier is a copy field (spec §10.3): undefined with no
            // initial value.
            MissingValue | NoTemplateId => SpecCode::D5,
            EmptyPrevious => SpecCode::D6,
            BadSubtraction(_) => SpecCode::D7,
            ExponentRange(_) | MantissaRange => SpecCode::R1,
            InvalidUtf8 => SpecCode::R2,
            TypeMismatch => SpecCode::D4,
            ConstantMismatch => SpecCode::D3,
        })
    }
}

/// An error found in a stream: what, where (byte offset from the start of the buffer given to
/// the decoder), and in which template and field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError {
    pub kind: ErrorKind,
    pub offset: usize,
    pub template: Option<String>,
    pub field: Option<String>,
}

impl CodecError {
    pub fn new(kind: ErrorKind, offset: usize) -> Self {
        CodecError {
            kind,
            offset,
            template: None,
            field: None,
        }
    }

    /// The spec code, if any.
    pub fn code(&self) -> Option<SpecCode> {
        self.kind.spec_code()
    }

    pub(crate) fn in_template(mut self, name: &str) -> Self {
        if self.template.is_none() {
            self.template = Some(name.to_owned());
        }
        self
    }
}

/// Adds the template and field to a boxed error on its way out.
pub trait Locate {
    fn in_field(self, name: &str) -> Self;
    fn in_template(self, name: &str) -> Self;
}

impl Locate for Box<CodecError> {
    fn in_field(mut self, name: &str) -> Self {
        if self.field.is_none() {
            self.field = Some(name.to_owned());
        }
        self
    }

    fn in_template(mut self, name: &str) -> Self {
        if self.template.is_none() {
            self.template = Some(name.to_owned());
        }
        self
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(code) = self.code() {
            write!(f, "[ERR {code}] ")?;
        }
        write!(f, "{} at byte {}", self.kind, self.offset)?;
        if let Some(t) = &self.template {
            write!(f, " in template {t}")?;
        }
        if let Some(n) = &self.field {
            write!(f, ", field {n}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CodecError {}

/// An error in template XML, with its place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub code: SpecCode,
    pub message: String,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: [ERR {}] {}",
            self.line, self.column, self.code, self.message
        )
    }
}

impl std::error::Error for TemplateError {}
