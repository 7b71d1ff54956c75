//! One bus port per record type, so callers handle a [`Record`] without matching on types.

use fastfeed_bus::{
    Bus, BusError, Control, Counters, EnvelopeHeader, Publisher, PublisherQos, Record as BusRecord,
    Securities, Sender, Subscriber, SubscriberQos,
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
pub struct RecordPublishers<B: Bus> {
    quote: B::Publisher<Quote>,
    new: B::Publisher<New>,
    change: B::Publisher<Change>,
    remove: B::Publisher<Remove>,
    marketdata: B::Publisher<MarketData>,
    quoterequest: B::Publisher<QuoteRequest>,
}

impl<B: Bus> RecordPublishers<B> {
    pub fn new(bus: &B, qos: &PublisherQos) -> Result<Self, BusError> {
        Ok(RecordPublishers {
            quote: bus.publisher(qos)?,
            new: bus.publisher(qos)?,
            change: bus.publisher(qos)?,
            remove: bus.publisher(qos)?,
            marketdata: bus.publisher(qos)?,
            quoterequest: bus.publisher(qos)?,
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
    /// a closing DONE for type 0, so a subscriber knows it has every type's count. `sender`
    /// is the bus's publisher id, which the envelopes carry; `group` its publisher group
    /// (0: alone).
    pub fn send_done(
        &self,
        control: &B::Sender<Control>,
        sender: u32,
        group: u32,
    ) -> Result<(), BusError> {
        macro_rules! done {
            ($f:ident, $t:ty) => {
                control.send(
                    Control::new(Control::DONE, sender, <$t>::type_tag(), self.$f.last_seq())
                        .in_group(group),
                )?;
            };
        }
        for_each_type!(done);
        control.send(Control::new(Control::DONE, sender, 0, 0).in_group(group))?;
        Ok(())
    }
}

/// A subscriber for each record type of a feed, all with the same security filter.
pub struct RecordSubscribers<B: Bus> {
    pub quote: B::Subscriber<Quote>,
    pub new: B::Subscriber<New>,
    pub change: B::Subscriber<Change>,
    pub remove: B::Subscriber<Remove>,
    pub marketdata: B::Subscriber<MarketData>,
    pub quoterequest: B::Subscriber<QuoteRequest>,
}

/// What a drained envelope said besides its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// [`BusRecord::type_tag`] of the record's type.
    pub type_tag: u32,
    /// The envelope's header.
    pub header: EnvelopeHeader,
}

impl<B: Bus> RecordSubscribers<B> {
    pub fn new(bus: &B, securities: &Securities, qos: &SubscriberQos) -> Result<Self, BusError> {
        Ok(RecordSubscribers {
            quote: bus.subscriber(securities.clone(), qos)?,
            new: bus.subscriber(securities.clone(), qos)?,
            change: bus.subscriber(securities.clone(), qos)?,
            remove: bus.subscriber(securities.clone(), qos)?,
            marketdata: bus.subscriber(securities.clone(), qos)?,
            quoterequest: bus.subscriber(securities.clone(), qos)?,
        })
    }

    /// Takes everything queued, calling `f` with the record and its envelope's header.
    pub fn drain(&mut self, mut f: impl FnMut(Record, Delivery)) -> Result<usize, BusError> {
        let mut n = 0;
        macro_rules! drain {
            ($f:ident, $t:ident) => {
                while let Some(env) = self.$f.try_recv()? {
                    let d = Delivery {
                        type_tag: <$t>::type_tag(),
                        header: env.header(),
                    };
                    f(Record::$t(env.record), d);
                    n += 1;
                }
            };
        }
        for_each_type!(drain);
        Ok(n)
    }

    /// Whether a late joiner's subscriber of some type is still taking the current state.
    pub fn joining(&self) -> bool {
        let mut joining = false;
        macro_rules! joining {
            ($f:ident, $t:ty) => {
                joining |= self.$f.joining();
            };
        }
        for_each_type!(joining);
        joining
    }

    /// Highest sequence seen from `publisher` for the type with this tag.
    pub fn seen_from(&self, publisher: u32, type_tag: u32) -> u64 {
        let mut seen = 0;
        macro_rules! seen {
            ($f:ident, $t:ty) => {
                if <$t>::type_tag() == type_tag {
                    seen = self.$f.seen_from(publisher);
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
