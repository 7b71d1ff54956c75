//! The FAST Session Control Protocol 1.1 messages a decoder and an encoder know without a
//! template file: venues send Reset (Deutsche Börse EMDI/EMDS, the Moscow Exchange) and some
//! of their template files leave it out. The templates are SCP 1.1's (as OpenFAST and mFAST
//! define them); a template file's own template of the same id takes precedence.

use super::model::Template;

/// The namespace of the SCP 1.1 templates' names.
pub const SCP_NS: &str = "http://www.fixprotocol.org/ns/fast/scp/1.1";
/// Reset: no fields; every dictionary is reset before it (and so before what follows).
pub const RESET_ID: u32 = 120;
/// Hello: the sender's name and, optionally, its vendor id.
pub const HELLO_ID: u32 = 16002;
/// Alert: a severity, a code, an optional value and a description.
pub const ALERT_ID: u32 = 16003;

/// The three templates, in the FAST template syntax.
pub const SCP_XML: &str = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1"
    templateNs="http://www.fixprotocol.org/ns/fast/scp/1.1">
  <template name="Reset" id="120" reset="yes"/>
  <template name="Hello" id="16002">
    <string name="SenderName"/>
    <string name="VendorId" presence="optional"/>
  </template>
  <template name="Alert" id="16003">
    <uInt32 name="Severity"/>
    <uInt32 name="Code"/>
    <uInt32 name="Value" presence="optional"/>
    <string name="Description"/>
  </template>
</templates>"#;

/// Appends the SCP templates whose ids `list` does not use. They have no operators, so
/// they take no dictionary slot.
pub(super) fn add_missing(list: &mut Vec<Template>) {
    let checked = super::xml::check_with(
        SCP_XML,
        super::ParseOptions {
            session_control: false,
        },
    );
    debug_assert!(checked.errors.is_empty(), "the SCP templates compile");
    let scp = checked.templates;
    debug_assert_eq!(scp.dictionary_slots(), 0);
    for t in scp.list {
        if list.iter().all(|own| own.id != t.id) {
            list.push(Template { session: true, ..t });
        }
    }
}
