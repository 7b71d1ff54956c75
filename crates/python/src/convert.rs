//! Messages as Python dicts and back, the shape `fastfeed decode` gives in JSON:
//! `templateId`, `templateName`, then each present field by name; decimals are
//! `decimal.Decimal` (exact, exponent kept), byte vectors `bytes`, sequences lists of dicts,
//! groups dicts, a dynamic template reference a nested message dict.

use fastfeed_codec::template::{FieldType, Instr, Kind};
use fastfeed_codec::{Decimal, Fields, Message, Templates, Value};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyType};

pub const TEMPLATE_ID: &str = "templateId";
pub const TEMPLATE_NAME: &str = "templateName";

fn decimal_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    CLASS.import(py, "decimal", "Decimal")
}

pub fn message_to_py<'py>(
    py: Python<'py>,
    m: &Message,
    ts: &Templates,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(TEMPLATE_ID, m.template_id)?;
    let t = ts
        .get(m.template_id)
        .ok_or_else(|| PyValueError::new_err(format!("unknown template {}", m.template_id)))?;
    d.set_item(TEMPLATE_NAME, &t.name)?;
    put_fields(py, &d, &t.body.instrs, &m.fields, ts)?;
    Ok(d)
}

fn put_fields(
    py: Python<'_>,
    d: &Bound<'_, PyDict>,
    instrs: &[Instr],
    fields: &Fields,
    ts: &Templates,
) -> PyResult<()> {
    for (instr, v) in instrs.iter().zip(fields) {
        if let Some(v) = v {
            d.set_item(&instr.name, value_to_py(py, instr, v, ts)?)?;
        }
    }
    Ok(())
}

fn value_to_py<'py>(
    py: Python<'py>,
    instr: &Instr,
    v: &Value,
    ts: &Templates,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::UInt(u) => u.into_pyobject(py)?.into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        // The exact text keeps the exponent: Decimal("9427.550") has three places.
        Value::Decimal(x) => decimal_class(py)?.call1((x.to_string(),))?,
        Value::Ascii(s) | Value::Unicode(s) => PyString::new(py, s).into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::Sequence(items) => {
            let Kind::Sequence { body, .. } = &instr.kind else {
                return Err(PyTypeError::new_err("sequence value on a non-sequence"));
            };
            let list = PyList::empty(py);
            for f in items {
                let e = PyDict::new(py);
                put_fields(py, &e, &body.instrs, f, ts)?;
                list.append(e)?;
            }
            list.into_any()
        }
        Value::Group(f) => {
            let Kind::Group(body) = &instr.kind else {
                return Err(PyTypeError::new_err("group value on a non-group"));
            };
            let e = PyDict::new(py);
            put_fields(py, &e, &body.instrs, f, ts)?;
            e.into_any()
        }
        Value::Message(m) => message_to_py(py, m, ts)?.into_any(),
    })
}

/// A message from its dict form; the template by `templateId`, else `templateName`.
pub fn message_from_py(d: &Bound<'_, PyAny>, ts: &Templates) -> PyResult<Message> {
    let d = d
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err("a message is a dict"))?;
    let t = match d.get_item(TEMPLATE_ID)? {
        Some(id) => {
            let id: u32 = id.extract()?;
            ts.get(id)
                .ok_or_else(|| PyKeyError::new_err(format!("no template with id {id}")))?
        }
        None => {
            let name: String = d
                .get_item(TEMPLATE_NAME)?
                .ok_or_else(|| {
                    PyKeyError::new_err(format!("a message needs {TEMPLATE_ID} or {TEMPLATE_NAME}"))
                })?
                .extract()?;
            ts.lookup(&name)
                .map_err(|e| PyKeyError::new_err(e.to_string()))?
        }
    };
    Ok(Message {
        template_id: t.id,
        fields: fields_from_py(d, &t.body.instrs, ts)?,
    })
}

fn fields_from_py(d: &Bound<'_, PyDict>, instrs: &[Instr], ts: &Templates) -> PyResult<Fields> {
    instrs
        .iter()
        .map(|instr| match d.get_item(&instr.name)? {
            Some(v) if !v.is_none() => value_from_py(instr, &v, ts)
                .map_err(|e| prefix(d.py(), &instr.name, e))
                .map(Some),
            _ => Ok(instr.constant_value()),
        })
        .collect()
}

fn prefix(py: Python<'_>, field: &str, e: PyErr) -> PyErr {
    let ty = e.get_type(py);
    PyErr::from_type(ty, format!("field {field}: {}", e.value(py)))
}

fn value_from_py(instr: &Instr, v: &Bound<'_, PyAny>, ts: &Templates) -> PyResult<Value> {
    match &instr.kind {
        Kind::Scalar(s) => scalar_from_py(s.ty, v),
        Kind::SplitDecimal { .. } => scalar_from_py(FieldType::Decimal, v),
        Kind::Sequence { body, .. } => {
            let mut items = Vec::new();
            for item in v.try_iter()? {
                let item = item?;
                let e = item
                    .cast::<PyDict>()
                    .map_err(|_| PyTypeError::new_err("sequence entries are dicts"))?;
                items.push(fields_from_py(e, &body.instrs, ts)?);
            }
            Ok(Value::Sequence(items))
        }
        Kind::Group(body) => {
            let e = v
                .cast::<PyDict>()
                .map_err(|_| PyTypeError::new_err("a group is a dict"))?;
            Ok(Value::Group(fields_from_py(e, &body.instrs, ts)?))
        }
        Kind::DynamicRef => Ok(Value::Message(Box::new(message_from_py(v, ts)?))),
    }
}

fn scalar_from_py(ty: FieldType, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    Ok(match ty {
        FieldType::Int(t) if t.signed() => Value::Int(v.extract()?),
        FieldType::Int(_) => Value::UInt(v.extract()?),
        FieldType::Decimal => {
            // Exact only: Decimal, int or str; a float has no exact decimal digits.
            if v.is_instance_of::<pyo3::types::PyFloat>() {
                return Err(PyTypeError::new_err(
                    "decimal fields take decimal.Decimal, int or str, not float",
                ));
            }
            let text = v.str()?.to_string();
            Value::Decimal(
                Decimal::parse(&text).ok_or_else(|| {
                    PyValueError::new_err(format!("{text} is not a FAST decimal"))
                })?,
            )
        }
        FieldType::Ascii => {
            let s: String = v.extract()?;
            if !s.is_ascii() {
                return Err(PyValueError::new_err(format!("{s:?} is not ASCII")));
            }
            Value::Ascii(s)
        }
        FieldType::Unicode => Value::Unicode(v.extract()?),
        FieldType::Bytes => Value::Bytes(v.extract()?),
    })
}
