//! Ports: typed data publisher/subscriber and the small echo/control sender/receiver.

use crate::bus::{Svc, WaitMode};
use crate::ice;
use crate::payload::{Aux, Data};
use fastfeed_bus::{
    Accounting, BusError, Envelope, Message, Publisher, Receiver, Record, Sender, Sequencer,
    Subscriber,
};
use iceoryx2::port::publisher::Publisher as IcePublisher;
use iceoryx2::port::subscriber::Subscriber as IceSubscriber;
use iceoryx2::service::port_factory::publish_subscribe::PortFactory;

/// Publishes records of one type in shared memory; numbers them 1, 2, 3, ...
pub struct ShmPublisher<R: Record> {
    pub(crate) port: IcePublisher<Svc, Data<R>, ()>,
    pub(crate) _service: PortFactory<Svc, Data<R>, ()>,
    pub(crate) seq: Sequencer,
}

impl<R: Record> Publisher<R> for ShmPublisher<R> {
    /// Loans a sample, writes the envelope in place and sends it to all subscribers
    /// (never blocks: full subscriber queues drop their oldest sample). Returns the seq.
    fn publish(&mut self, record: &R) -> Result<u64, BusError> {
        let sample = self.port.loan_uninit().map_err(ice("loan sample"))?;
        let sample = sample.write_payload(Data(self.seq.stamp(record)));
        sample.send().map_err(ice("send sample"))?;
        Ok(self.seq.last_seq())
    }

    fn last_seq(&self) -> u64 {
        self.seq.last_seq()
    }
}

/// Receives records of one type from shared memory, filtered by security.
pub struct ShmSubscriber<R: Record> {
    pub(crate) port: IceSubscriber<Svc, Data<R>, ()>,
    pub(crate) _service: PortFactory<Svc, Data<R>, ()>,
    pub(crate) accounting: Accounting,
    pub(crate) wait_mode: WaitMode,
}

impl<R: Record> Subscriber<R> for ShmSubscriber<R> {
    fn try_recv(&mut self) -> Result<Option<Envelope<R>>, BusError> {
        loop {
            let Some(sample) = self.port.receive().map_err(ice("receive"))? else {
                return Ok(None);
            };
            let env = sample.payload().0;
            drop(sample); // return the slot to the publisher right away
            if self.accounting.accept(&env) {
                return Ok(Some(env));
            }
        }
    }

    fn accounting(&self) -> &Accounting {
        &self.accounting
    }

    fn pause(&self) {
        self.wait_mode.pause();
    }
}

/// Sender of small auxiliary messages ([`Echo`](fastfeed_bus::Echo),
/// [`Control`](fastfeed_bus::Control)).
pub struct ShmSender<M: Message> {
    pub(crate) port: IcePublisher<Svc, Aux<M>, ()>,
    pub(crate) _service: PortFactory<Svc, Aux<M>, ()>,
}

impl<M: Message> Sender<M> for ShmSender<M> {
    /// Sends a copy of `message`; returns how many subscribers it was delivered to.
    fn send(&self, message: M) -> Result<usize, BusError> {
        self.port
            .send_copy(Aux(message))
            .map_err(ice("send aux message"))
    }
}

/// Receiver of small auxiliary messages.
pub struct ShmReceiver<M: Message> {
    pub(crate) port: IceSubscriber<Svc, Aux<M>, ()>,
    pub(crate) _service: PortFactory<Svc, Aux<M>, ()>,
    pub(crate) wait_mode: WaitMode,
}

impl<M: Message> Receiver<M> for ShmReceiver<M> {
    fn try_recv(&self) -> Result<Option<M>, BusError> {
        Ok(self
            .port
            .receive()
            .map_err(ice("receive aux message"))?
            .map(|s| s.payload().0))
    }

    fn pause(&self) {
        self.wait_mode.pause();
    }
}
