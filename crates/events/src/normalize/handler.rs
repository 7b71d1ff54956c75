//! The [`Normalizer`]'s side of the decoder's callbacks: where each value goes by its
//! position in the template (a message field, an entry field, a nested part to skip).

use super::*;

impl Handler for Normalizer {
    fn begin_message(&mut self, template: &Template) {
        self.stats.messages += 1;
        self.cur = self.map_index(template.id);
        self.tid = template.id;
        self.pos = 0;
        self.seq = None;
        self.skip = 0;
        self.top = TopScratch::default();
        self.msg_start = self.batch.events.len() as u32;
        if let Some(m) = self.cur {
            if self.maps[m].kind == MsgKind::Snapshot {
                // The header, completed at the end of the message.
                self.batch
                    .events
                    .push(Event::SnapshotBegin(SnapshotHeader::default()));
            }
        }
    }

    fn end_message(&mut self) {
        let Some(m) = self.cur.take() else { return };
        self.finish_message(m);
        let t = self.top;
        self.batch.messages.push(MessageInfo {
            kind: self.maps[m].kind,
            template_id: self.tid,
            msg_seq_num: t.msg_seq_num,
            sending_time: t.sending_time,
            events: (self.msg_start, self.batch.events.len() as u32),
        });
    }

    // Inlined into the decoder, where each call site's value type is known.
    #[inline(always)]
    fn value(&mut self, _: &Instr, v: FieldValue<'_>) {
        let Some(m) = self.cur else { return };
        if self.skip > 0 {
            return;
        }
        match self.seq {
            Some(_) => {
                let role = self
                    .elem_roles
                    .get(self.elem_pos)
                    .copied()
                    .unwrap_or(Elem::Skip);
                self.elem_pos += 1;
                self.elem_value(role, v);
            }
            None => {
                let role = self.maps[m].top.get(self.pos).copied().unwrap_or(Top::Skip);
                self.pos += 1;
                self.top_value(role, v);
            }
        }
    }

    fn absent(&mut self, _: &Instr) {
        if self.skip == 0 {
            self.advance();
        }
    }

    fn begin_sequence(&mut self, _: &Instr, _: u32) {
        let Some(m) = self.cur else { return };
        match self.maps[m].top.get(self.pos) {
            Some(&Top::Seq(k)) if self.skip == 0 && self.seq.is_none() => {
                self.seq = Some(k);
                let map = &self.maps[m];
                self.elem_roles.clone_from(&map.seqs[k as usize].0);
                self.in_md = map.is_entries(k);
                self.kind = map.kind;
            }
            _ => self.skip += 1,
        }
    }

    fn begin_element(&mut self, _: u32) {
        if self.skip == 0 && self.seq.is_some() {
            self.elem_pos = 0;
            self.entry = EntryScratch::default();
        }
    }

    fn end_element(&mut self) {
        if self.skip == 0 && self.seq.is_some() && self.cur.is_some() {
            self.finish_entry(self.kind, self.in_md);
        }
    }

    fn end_sequence(&mut self) {
        if self.skip == 0 && self.seq.is_some() {
            self.seq = None;
            self.pos += 1;
        } else {
            self.end_nested();
        }
    }

    fn begin_group(&mut self, _: &Instr) {
        self.skip += 1;
    }

    fn end_group(&mut self) {
        self.end_nested();
    }

    fn begin_template_ref(&mut self, _: &Template) {
        self.skip += 1;
    }

    fn end_template_ref(&mut self) {
        self.end_nested();
    }
}
