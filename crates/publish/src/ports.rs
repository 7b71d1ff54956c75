//! One bus port per record type, so callers handle a [`Record`] without matching on types.

use fastfeed_bus::{
    Bus, BusError, Control, Counters, EnvelopeHeader, Publisher, PublisherQos, Record as BusRecord,
    Securities, Sender, Subscriber, SubscriberQos,
};
use fastfeed_records::{
    Change, MarketData, New, OptionQuote, OptionTrade, Quote, QuoteRequest, Record, Remove,
};

macro_rules! for_each_type {
    ($m:ident) => {
        $m!(quote, Quote);
        $m!(new, New);
        $m!(change, Change);
        $m!(remove, Remove);
        $m!(marketdata, MarketData);
        $m!(quoterequest, QuoteRequest);
        $m!(optionquote, OptionQuote);
        $m!(optiontrade, OptionTrade);
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
    optionquote: B::Publisher<OptionQuote>,
    optiontrade: B::Publisher<OptionTrade>,
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
            optionquote: bus.publisher(qos)?,
            optiontrade: bus.publisher(qos)?,
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
            Record::OptionQuote(x) => self.optionquote.publish(x),
            Record::OptionTrade(x) => self.optiontrade.publish(x),
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
    pub optionquote: B::Subscriber<OptionQuote>,
    pub optiontrade: B::Subscriber<OptionTrade>,
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
            optionquote: bus.subscriber(securities.clone(), qos)?,
            optiontrade: bus.subscriber(securities.clone(), qos)?,
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

    /// Per record type: its name, its type tag, what its subscriber counted and the samples
    /// it refused as malformed.
    pub fn per_type(&self) -> Vec<(&'static str, u32, Counters, u64)> {
        let mut v = Vec::new();
        macro_rules! push {
            ($f:ident, $t:ty) => {
                v.push((
                    <$t as BusRecord>::TYPE_NAME,
                    <$t>::type_tag(),
                    self.$f.counters(),
                    self.$f.rejected(),
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

#[cfg(test)]
mod tests {
    use fastfeed_bus::{LocalBus, PublisherQos, Securities, SubscriberQos};
    use fastfeed_records::{Dec, OptionQuote, OptionTrade, Record};

    use super::*;

    /// The option types have ports of their own: published, filtered by series, drained and
    /// counted like the others.
    #[test]
    fn option_records_travel_on_their_own_topics() {
        let bus = LocalBus::new("ports").unwrap();
        let mut subs = RecordSubscribers::new(
            &bus.join(),
            &Securities::Only(vec![7]),
            &SubscriberQos::default(),
        )
        .unwrap();
        let mut pubs = RecordPublishers::new(&bus, &PublisherQos::default()).unwrap();
        let quote = |series_id| OptionQuote {
            series_id,
            channel: 3,
            bid: Dec::new(125, -2),
            ..OptionQuote::default()
        };
        let trade = OptionTrade {
            series_id: 7,
            volume: 5,
            ..OptionTrade::default()
        };
        for r in [
            Record::OptionQuote(quote(7)),
            Record::OptionQuote(quote(8)),
            Record::OptionTrade(trade),
            Record::Done,
        ] {
            pubs.publish(&r).unwrap();
        }
        let published = pubs.published();
        assert!(published.contains(&("optionquote", 2)), "{published:?}");
        assert!(published.contains(&("optiontrade", 1)), "{published:?}");
        let mut got = Vec::new();
        subs.drain(|r, d| got.push((r, d.type_tag))).unwrap();
        assert_eq!(
            got,
            [
                (Record::OptionQuote(quote(7)), OptionQuote::type_tag()),
                (Record::OptionTrade(trade), OptionTrade::type_tag()),
            ]
        );
        let names: Vec<_> = subs.per_type().iter().map(|t| t.0).collect();
        assert_eq!(
            names.len(),
            Record::TYPE_NAMES.len() - 1,
            "every type but done"
        );
        assert!(names.contains(&"optionquote") && names.contains(&"optiontrade"));
        assert_eq!(subs.totals(), (2, 1, 0));
    }
}
