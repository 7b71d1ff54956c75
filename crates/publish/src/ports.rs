//! One bus port per record type, so callers handle a [`Record`] without matching on types.

use fastfeed_bus::{
    Bus, BusError, Control, ControlPublisher, Counters, Envelope, Publisher, Record as BusRecord,
    Securities, Subscriber,
};
use fastfeed_records::{Change, MarketData, New, Quote, QuoteRequest, Record, Remove};

macro_rules! for_each_type {
    ($m:ident) => {
        $m!(quote, Quote);
        $m!(new, New);
        $m!(change, Change);
        $m!(remove, Remove);
        $m!(marketdata, MarketData);
        $m!(quoterequest, QuoteRequest);
    };
}

/// A publisher for each record type of a feed.
pub struct RecordPublishers {
    quote: Publisher<Quote>,
    new: Publisher<New>,
    change: Publisher<Change>,
    remove: Publisher<Remove>,
    marketdata: Publisher<MarketData>,
    quoterequest: Publisher<QuoteRequest>,
}

impl RecordPublishers {
    pub fn new(bus: &Bus) -> Result<Self, BusError> {
        Ok(RecordPublishers {
            quote: bus.publisher()?,
            new: bus.publisher()?,
            change: bus.publisher()?,
            remove: bus.publisher()?,
            marketdata: bus.publisher()?,
            quoterequest: bus.publisher()?,
        })
    }

    /// Publishes one record; Done is not a record on the bus (see [`Self::send_done`]).
    pub fn publish(&mut self, r: &Record) -> Result<(), BusError> {
        match r {
            Record::Quote(x) => self.quote.publish(x),
            Record::New(x) => self.new.publish(x),
            Record::Change(x) => self.change.publish(x),
            Record::Remove(x) => self.remove.publish(x),
            Record::MarketData(x) => self.marketdata.publish(x),
            Record::QuoteRequest(x) => self.quoterequest.publish(x),
            Record::Done => return Ok(()),
        }
        .map(|_| ())
    }

    /// Records published per type, as (type name, count).
    pub fn published(&self) -> Vec<(&'static str, u64)> {
        let mut v = Vec::new();
        macro_rules! push {
            ($f:ident, $t:ty) => {
                v.push((<$t as BusRecord>::TYPE_NAME, self.$f.last_seq()));
            };
        }
        for_each_type!(push);
        v
    }

    /// The Done token: one DONE per type, carrying the last sequence number published, then
    /// a closing DONE for type 0, so a subscriber knows it has every type's count.
    pub fn send_done(&self, control: &ControlPublisher, sender: u32) -> Result<(), BusError> {
        macro_rules! done {
            ($f:ident, $t:ty) => {
                control.send(Control {
                    kind: Control::DONE,
                    sender,
                    type_tag: <$t>::type_tag(),
                    count: self.$f.last_seq(),
                })?;
            };
        }
        for_each_type!(done);
        control.send(Control {
            kind: Control::DONE,
            sender,
            type_tag: 0,
            count: 0,
        })?;
        Ok(())
    }
}

/// A subscriber for each record type of a feed, all with the same security filter.
pub struct RecordSubscribers {
    pub quote: Subscriber<Quote>,
    pub new: Subscriber<New>,
    pub change: Subscriber<Change>,
    pub remove: Subscriber<Remove>,
    pub marketdata: Subscriber<MarketData>,
    pub quoterequest: Subscriber<QuoteRequest>,
}

impl RecordSubscribers {
    pub fn new(bus: &Bus, securities: &Securities) -> Result<Self, BusError> {
        Ok(RecordSubscribers {
            quote: bus.subscriber(securities.clone())?,
            new: bus.subscriber(securities.clone())?,
            change: bus.subscriber(securities.clone())?,
            remove: bus.subscriber(securities.clone())?,
            marketdata: bus.subscriber(securities.clone())?,
            quoterequest: bus.subscriber(securities.clone())?,
        })
    }

    /// Takes everything queued, calling `f` with the record, its type tag and envelope data.
    pub fn drain(&mut self, mut f: impl FnMut(Record, u32, u64, u64)) -> Result<usize, BusError> {
        let mut n = 0;
        macro_rules! drain {
            ($f:ident, $t:ident) => {
                while let Some(Envelope {
                    seq,
                    sent_ns,
                    record,
                }) = self.$f.try_recv()?
                {
                    f(Record::$t(record), <$t>::type_tag(), seq, sent_ns);
                    n += 1;
                }
            };
        }
        for_each_type!(drain);
        Ok(n)
    }

    /// Highest sequence seen for the type with this tag.
    pub fn seen_up_to(&self, type_tag: u32) -> u64 {
        let mut seen = 0;
        macro_rules! seen {
            ($f:ident, $t:ty) => {
                if <$t>::type_tag() == type_tag {
                    seen = self.$f.seen_up_to();
                }
            };
        }
        for_each_type!(seen);
        seen
    }

    /// Per record type: its name, its type tag and what its subscriber counted.
    pub fn per_type(&self) -> Vec<(&'static str, u32, Counters)> {
        let mut v = Vec::new();
        macro_rules! push {
            ($f:ident, $t:ty) => {
                v.push((
                    <$t as BusRecord>::TYPE_NAME,
                    <$t>::type_tag(),
                    self.$f.counters(),
                ));
            };
        }
        for_each_type!(push);
        v
    }

    /// (received, filtered out, missed) over all types. Called in the receive loop, so it
    /// sums in place rather than through [`Self::per_type`].
    pub fn totals(&self) -> (u64, u64, u64) {
        let mut t = (0, 0, 0);
        macro_rules! add {
            ($f:ident, $ty:ty) => {
                let c = self.$f.counters();
                t.0 += c.received;
                t.1 += c.filtered_out;
                t.2 += c.missed + c.missed_at_start;
            };
        }
        for_each_type!(add);
        t
    }
}
