//! What each template becomes in FIX, worked out once: its MsgType (35), whether it can be
//! written at all, and the MsgType -> template map the reader chooses templates by.

use std::collections::HashMap;

use fastfeed_codec::template::{Initial, Instr, Kind, Op};
use fastfeed_codec::{Template, Templates};

use crate::{FixError, FixOptions};

/// The FIX tag of a field: its `id` attribute, when that is a tag number.
pub(crate) fn tag_of(id: Option<&str>) -> Option<u32> {
    let s = id?;
    let canonical = !s.is_empty()
        && s.len() <= 9
        && s.bytes().all(|b| b.is_ascii_digit())
        && !s.starts_with('0');
    if canonical {
        s.parse().ok()
    } else {
        None
    }
}

/// What a template is in FIX.
#[derive(Debug, Clone)]
pub(crate) enum Role {
    /// A FAST session control message (Reset and the like): not a FIX message.
    Session,
    /// Written as FIX; `msg_type` unless the template's own non-constant 35 field says
    /// otherwise message by message.
    Fix { msg_type: Box<[u8]> },
    /// Cannot be written; why.
    Refused(FixError),
}

/// The roles of a template set and the reader's index.
#[derive(Debug, Clone)]
pub(crate) struct Plans {
    pub roles: HashMap<u32, Role>,
    /// MsgType -> templates carrying it, in file order.
    pub by_msg_type: HashMap<Box<[u8]>, Vec<u32>>,
    /// Templates whose 35 field is not a constant: tried when no MsgType matches.
    pub open_msg_type: Vec<u32>,
}

pub(crate) fn is_session(t: &Template) -> bool {
    t.session || (t.body.instrs.is_empty() && t.reset)
}

impl Plans {
    pub fn new(templates: &Templates, opts: &FixOptions) -> Plans {
        let mut roles = HashMap::new();
        let mut by_msg_type: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        let mut open_msg_type = Vec::new();
        for t in templates.iter() {
            if is_session(t) {
                roles.insert(t.id, Role::Session);
                continue;
            }
            let role = match check(t, &t.body.instrs, true, opts.skip_untagged) {
                Err(e) => Role::Refused(e),
                Ok(()) => {
                    // A map entry names the MsgType of a template that has no 35 field of
                    // its own; FIX leaves MsgTypes starting with U to users, so the template
                    // id makes one that reads back to the same template.
                    let fallback = || -> Box<[u8]> {
                        match opts.msg_types.iter().find(|(id, _)| *id == t.id) {
                            Some((_, v)) => v.as_bytes().into(),
                            None => format!("U{}", t.id).into_bytes().into(),
                        }
                    };
                    let msg_type = match field_35(t) {
                        Some((Op::Constant, Some(v))) => v,
                        Some((_, v)) => {
                            open_msg_type.push(t.id);
                            v.unwrap_or_else(fallback)
                        }
                        None => fallback(),
                    };
                    by_msg_type.entry(msg_type.clone()).or_default().push(t.id);
                    Role::Fix { msg_type }
                }
            };
            roles.insert(t.id, role);
        }
        Plans {
            roles,
            by_msg_type,
            open_msg_type,
        }
    }
}

/// The top-level MsgType (35) field's operator and initial value, if the template has one.
pub(crate) fn field_35(t: &Template) -> Option<(Op, Option<Box<[u8]>>)> {
    t.body.instrs.iter().find_map(|i| match &i.kind {
        Kind::Scalar(s) if tag_of(i.id.as_deref()) == Some(35) => Some((
            s.op,
            match &s.initial {
                Some(Initial::Bytes(b)) => Some(b.clone()),
                _ => None,
            },
        )),
        _ => None,
    })
}

/// Whether every field of `instrs` can be written: a tag number that the converter does not
/// compute itself, no dynamic reference (unless skipping).
fn check(t: &Template, instrs: &[Instr], top: bool, skip: bool) -> Result<(), FixError> {
    let untagged = |field: &str| FixError::Untagged {
        template: t.name.clone(),
        field: field.to_owned(),
    };
    for i in instrs {
        match &i.kind {
            Kind::DynamicRef if skip => {}
            Kind::DynamicRef => {
                return Err(FixError::DynamicRef {
                    template: t.name.clone(),
                    field: i.name.clone(),
                })
            }
            Kind::Group(body) => check(t, &body.instrs, false, skip)?,
            Kind::Sequence {
                length_name,
                length_id,
                body,
                ..
            } => match length_id {
                None if skip => {}
                None => return Err(untagged(length_name)),
                Some(id) => {
                    check_tag(t, length_name, id, false)?;
                    check(t, &body.instrs, false, skip)?;
                }
            },
            Kind::Scalar(_) | Kind::SplitDecimal { .. } => match &i.id {
                None if skip => {}
                None => return Err(untagged(&i.name)),
                Some(id) => check_tag(t, &i.name, id, top)?,
            },
        }
    }
    Ok(())
}

fn check_tag(t: &Template, field: &str, id: &str, top: bool) -> Result<(), FixError> {
    let tag = tag_of(Some(id)).ok_or_else(|| FixError::BadTagId {
        template: t.name.clone(),
        field: field.to_owned(),
        id: id.to_owned(),
    })?;
    // 35 belongs in the header, so only a top-level field may carry it.
    if matches!(tag, 8..=10) || (tag == 35 && !top) {
        return Err(FixError::ReservedTag {
            template: t.name.clone(),
            field: field.to_owned(),
            tag,
        });
    }
    Ok(())
}
