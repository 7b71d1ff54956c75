//! fastfeed's exceptions, with the FAST spec code and the place of the error as attributes.

use fastfeed_arrow::TableError as ArrowTableError;
use fastfeed_codec::{CodecError, TemplateError as XmlError};
use fastfeed_packet::StreamError;
use pyo3::exceptions::{PyException, PyOSError};
use pyo3::prelude::*;
use pyo3::BoundObject;
use pyo3::{create_exception, PyErr};

create_exception!(
    fastfeed,
    FastError,
    PyException,
    "Base class of fastfeed's errors."
);
create_exception!(
    fastfeed,
    TemplateError,
    FastError,
    "An error in template XML: `code` (the FAST spec's S* or D* code), `line`, `column`, `message`."
);
create_exception!(
    fastfeed,
    DecodeError,
    FastError,
    "A decoding error: `code` (the spec's D*/R* code or None), `packet` (0-based), `offset` \
     (byte of the input where decoding failed), `template`, `field`."
);
create_exception!(
    fastfeed,
    EncodeError,
    FastError,
    "A message that cannot be encoded: `code`, `template`, `field`."
);
create_exception!(
    fastfeed,
    TableError,
    FastError,
    "A table that cannot be made: a template a table cannot hold, or a decimal its column's \
     scale cannot hold exactly (`column`, `value`, `scale`)."
);

fn with_attrs(py: Python<'_>, err: PyErr, attrs: &[(&str, Py<PyAny>)]) -> PyErr {
    let v = err.value(py);
    for (k, a) in attrs {
        // Setting an attribute on a fresh exception instance cannot fail.
        let _ = v.setattr(*k, a);
    }
    err
}

/// `err` with `hint` as its `hint` attribute and after its message: what to try.
pub fn with_hint(py: Python<'_>, err: PyErr, hint: &str) -> PyErr {
    let message = err
        .value(py)
        .getattr("args")
        .and_then(|a| a.get_item(0))
        .and_then(|m| m.extract::<String>())
        .unwrap_or_default();
    with_attrs(
        py,
        err,
        &[
            ("hint", obj(py, hint)),
            ("args", obj(py, (format!("{message}; {hint}"),))),
        ],
    )
}

fn obj<'py, T: IntoPyObject<'py>>(py: Python<'py>, v: T) -> Py<PyAny> {
    v.into_pyobject(py)
        .map(|b| BoundObject::into_any(b).unbind())
        .unwrap_or_else(|_| py.None())
}

pub fn template_error(py: Python<'_>, e: &XmlError) -> PyErr {
    let err = TemplateError::new_err(e.to_string());
    with_attrs(
        py,
        err,
        &[
            ("code", obj(py, e.code.to_string())),
            ("line", obj(py, e.line)),
            ("column", obj(py, e.column)),
            ("message", obj(py, e.message.clone())),
        ],
    )
}

fn codec_attrs(py: Python<'_>, e: &CodecError) -> Vec<(&'static str, Py<PyAny>)> {
    vec![
        ("code", obj(py, e.code().map(|c| c.to_string()))),
        ("template", obj(py, e.template.clone())),
        ("field", obj(py, e.field.clone())),
        ("kind", obj(py, e.kind.to_string())),
    ]
}

pub fn codec_error(py: Python<'_>, e: &CodecError, packet: usize, offset: usize) -> PyErr {
    let mut attrs = codec_attrs(py, e);
    attrs.push(("packet", obj(py, packet)));
    attrs.push(("offset", obj(py, offset)));
    attrs.push(("hint", py.None()));
    with_attrs(py, DecodeError::new_err(e.to_string()), &attrs)
}

pub fn encode_error(py: Python<'_>, e: &CodecError) -> PyErr {
    with_attrs(py, EncodeError::new_err(e.to_string()), &codec_attrs(py, e))
}

pub fn stream_error(py: Python<'_>, e: &StreamError) -> PyErr {
    match e {
        StreamError::Decode(p) => {
            let err = codec_error(py, &p.error, p.packet, p.file_offset);
            // The message names the packet and file byte too.
            with_attrs(py, err, &[("args", obj(py, (p.to_string(),)))])
        }
        StreamError::Io(io) => PyOSError::new_err(io.to_string()),
        other => with_attrs(
            py,
            DecodeError::new_err(other.to_string()),
            &[
                ("code", obj(py, framing_code(other))),
                ("packet", py.None()),
                ("offset", obj(py, framing_offset(other))),
                ("template", py.None()),
                ("field", py.None()),
                ("kind", obj(py, other.to_string())),
                ("hint", py.None()),
            ],
        ),
    }
}

fn framing_offset(e: &StreamError) -> Option<usize> {
    match e {
        StreamError::Framing(f) => Some(f.offset()),
        StreamError::PacketTooLong { offset, .. } => Some(*offset),
        _ => None,
    }
}

/// The spec's code of a framing error (D12, a block of size zero), as a string.
fn framing_code(e: &StreamError) -> Option<String> {
    match e {
        StreamError::Framing(f) => f.spec_code().map(|c| c.to_string()),
        _ => None,
    }
}

pub fn table_error(py: Python<'_>, e: &ArrowTableError) -> PyErr {
    match e {
        ArrowTableError::Stream(s) => stream_error(py, s),
        ArrowTableError::Io(io) => PyOSError::new_err(io.to_string()),
        ArrowTableError::Decimal {
            column,
            value,
            scale,
            ..
        } => with_attrs(
            py,
            self::TableError::new_err(e.to_string()),
            &[
                ("column", obj(py, column.clone())),
                ("value", obj(py, value.clone())),
                ("scale", obj(py, *scale)),
            ],
        ),
        other => self::TableError::new_err(other.to_string()),
    }
}
