#!/usr/bin/env python3
"""Receive fastfeed records over Zenoh from Python, with nothing but `eclipse-zenoh`.

Decodes the documented wire layout (crates/records/LAYOUT.md, "On Zenoh") with `struct`:
no fastfeed package. Prints one line per record (`--json`: one JSON object per line, the
same fields and order as `fastfeed subscribe --print`), then a count per record type and
how many were missed (gaps in the envelope's per-type sequence numbers, and records the
publisher's Done says it sent that never came).

    pip install eclipse-zenoh==1.10.2
    python3 examples/python/subscribe.py --connect tcp/10.0.0.1:7447 --feed moex

Stops after `--count N` records, at the publisher's Done once every record it announced
is accounted for, after `--idle-timeout` seconds without a sample, or on Ctrl-C.
Exit status 0 when nothing was missed (or `--count` was reached), 1 otherwise.
"""

import argparse
import json
import os
import random
import struct
import sys
import time

import zenoh

WIRE_VERSION = 2
PREFIX = struct.Struct("<HHI")  # wire version, layout version, type tag
ENVELOPE = struct.Struct("<QQQI4x")  # seq, security_seq, sent_ns, publisher
RECORD_OFFSET = PREFIX.size + ENVELOPE.size  # 40
# kind, sender, type tag (an announcement: its publisher group's size), group, count
CONTROL = struct.Struct("<IIIIQ")

# Control kinds (fastfeed_bus::Control).
DONE, HELLO, BYE, PUBLISHER, PUBLISHER_ECHO = 1, 2, 3, 4, 5
HELLO_EVERY = 0.2  # the publisher's heartbeat: it takes a silent subscriber for gone
LINGER = 0.5  # after the Done, for records it overtook (subset of securities only)


def type_tag(name):
    """FNV-1a (32-bit) of the type name: the tag in every sample's prefix."""
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def text(raw):
    """Str<N>: a length byte, then the text (the length clamped to N)."""
    n = min(raw[0], len(raw) - 1)
    return raw[1 : 1 + n].decode("utf-8", "replace")


class Dec:
    """A FAST decimal, mantissa * 10^exponent, written as JSON exactly (never a float)."""

    __slots__ = ("mantissa", "exponent")

    def __init__(self, mantissa, exponent):
        self.mantissa, self.exponent = mantissa, exponent

    def __str__(self):
        if self.exponent == 0:
            return str(self.mantissa)
        return f"{self.mantissa}e{self.exponent}"


# Simple data: the fields in layout order; the last byte is `side` (padding for Quote).
SIMPLE = struct.Struct("<IIIIIHHBBBB")
REMOVE = struct.Struct("<IIIHHBBBB")
HEAD = ("sequence_number", "timestamp", "order_id")
IDS = ("message_type", "security_id", "exchange_id", "security_type", "session_id")


def simple(extra):
    def decode(b):
        (seq, ts, oid, volume, price, mtype, sec, exch, stype, sess, side) = SIMPLE.unpack(b)
        r = dict(zip(HEAD, (seq, ts, oid)))
        r.update(zip(IDS, (mtype, sec, exch, stype, sess)))
        r["volume"], r["price"] = volume, price
        if extra:
            r["side"] = side
        return r

    return decode


def remove(b):
    (seq, ts, oid, mtype, sec, exch, stype, sess, side) = REMOVE.unpack(b)
    r = dict(zip(HEAD, (seq, ts, oid)))
    r.update(zip(IDS, (mtype, sec, exch, stype, sess)))
    r["side"] = side
    return r


# MdEntry, 112 bytes: two Dec (i64 mantissa, i32 exponent, 4 bytes padding), twelve 32-bit
# integers (md_entry_size signed), then four Str<3> and two Str<7>.
MD_ENTRY = struct.Struct("<qi4xqi4x IIIIIII i IIII 4s4s4s4s8s8s".replace(" ", ""))
MD_FIELDS = (  # MdEntry::FIELDS: bit i of `present`
    "MDUpdateAction", "MDPriceLevel", "MDEntryType", "OpenCloseSettleFlag",
    "SecurityIDSource", "SecurityID", "RptSeq", "MDEntryPx", "MDEntryTime", "MDEntrySize",
    "NumberOfOrders", "TradingSessionID", "NetChgPrevDay", "TradeVolume", "TradeCondition",
    "TickDirection", "QuoteCondition", "AggressorSide", "MatchEventIndicator",
)
MD_HEAD = struct.Struct("<IIIIIHH")


def present(names, bits, values):
    return {n: v for i, (n, v) in enumerate(zip(names, values)) if bits >> i & 1}


def md_entry(b):
    (px_m, px_e, chg_m, chg_e, action, level, ocs, src, sec, rpt, time_, size, orders,
     volume, aggressor, bits, etype, session, tick, mei, trade_cond, quote_cond) = (
        MD_ENTRY.unpack(b))
    values = (action, level, text(etype), ocs, src, sec, rpt, Dec(px_m, px_e), time_, size,
              orders, text(session), Dec(chg_m, chg_e), volume, text(trade_cond), text(tick),
              text(quote_cond), aggressor, text(mei))
    return present(MD_FIELDS, bits, values)


def market_data(b):
    sec, seq, sending, trade_date, count, part, parts = MD_HEAD.unpack_from(b)
    count = min(count, 8)
    off = MD_HEAD.size
    entries = [md_entry(b[off + i * 112 : off + (i + 1) * 112]) for i in range(count)]
    return {"security_id": sec, "msg_seq_num": seq, "sending_time": sending,
            "trade_date": trade_date, "part": part, "parts": parts, "MDEntries": entries}


RELATED = struct.Struct("<IIIIIII24s")
RELATED_FIELDS = ("Symbol", "SecurityIDSource", "SecurityID", "OrderQty", "Side",
                  "TransactTime", "QuoteType")
QR_HEAD = struct.Struct("<IIIIHH24s")


def related_sym(b):
    src, sec, qty, side, transact, qtype, bits, symbol = RELATED.unpack(b)
    values = (text(symbol), src, sec, qty, side, transact, qtype)
    return present(RELATED_FIELDS, bits, values)


def quote_request(b):
    sec, seq, sending, count, part, parts, req_id = QR_HEAD.unpack_from(b)
    count = min(count, 4)
    off = QR_HEAD.size
    entries = [related_sym(b[off + i * 52 : off + (i + 1) * 52]) for i in range(count)]
    return {"security_id": sec, "msg_seq_num": seq, "sending_time": sending,
            "quote_req_id": text(req_id), "part": part, "parts": parts, "RelatedSym": entries}


# The OPRA-like options: eight 32-bit words (OptionQuote's eighth is padding), then Decs.
OPTION_QUOTE = struct.Struct("<IIIIIII4xqi4xqi4x")
OPTION_TRADE = struct.Struct("<IIIIIIIIqi4x")
OPTION_HEAD = ("series_id", "msg_seq_num", "time", "participant")


def option_quote(b):
    *head, bid_size, ask_size, channel, bid_m, bid_e, ask_m, ask_e = OPTION_QUOTE.unpack(b)
    r = dict(zip(OPTION_HEAD, head))
    r.update(bid_size=bid_size, ask_size=ask_size, channel=channel, bid=Dec(bid_m, bid_e),
             ask=Dec(ask_m, ask_e))
    return r


def option_trade(b):
    *head, volume, condition, channel, bits, price_m, price_e = OPTION_TRADE.unpack(b)
    r = dict(zip(OPTION_HEAD, head))
    r["volume"] = volume
    if bits & 1:  # TradeCondition was in the message; left out when absent
        r["condition"] = condition
    r.update(channel=channel, price=Dec(price_m, price_e))
    return r


# type name -> (layout version, record size, decoder); LAYOUT.md's table.
RECORDS = {
    "quote": (1, 28, simple(False)),
    "new": (1, 28, simple(True)),
    "change": (1, 28, simple(True)),
    "remove": (1, 20, remove),
    "marketdata": (1, 920, market_data),
    "quoterequest": (1, 252, quote_request),
    "optionquote": (1, 64, option_quote),
    "optiontrade": (1, 48, option_trade),
}
BY_TAG = {type_tag(name): (name, *spec) for name, spec in RECORDS.items()}
CONTROL_TAG, ECHO_TAG = type_tag("control"), type_tag("echo")


def to_json(value):
    """JSON as `fastfeed subscribe --print` writes it: compact, insertion order, decimals
    exact."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(to_json, value)) + "]"
    if isinstance(value, Dec):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def whole_types(key):
    """Whether `key` takes every security of the types it names (`fastfeed/**`,
    `fastfeed/moex/quote/*`), so the envelope's per-type `seq` has no gap but losses."""
    chunks = key.split("/")
    tail = chunks[chunks.index("**"):] if "**" in chunks[:3] else chunks[3:]
    return all(c in ("*", "**") for c in tail)


class Tally:
    """Records received and missed per stream: (publisher, type) numbered by the envelope's
    `seq` when the key expression takes whole types, else (publisher, type, security)
    numbered by `security_seq` (then a security never seen cannot be counted)."""

    def __init__(self, whole):
        self.whole = whole
        self.received = {}  # stream -> count
        self.top = {}  # stream -> highest number seen
        self.done = {}  # (publisher, type tag) -> last seq the publisher announced
        self.closed = {}  # publisher -> when its closing Done (type 0) came
        # A multi-channel publisher's threads are one group (nonzero id) on the feed: the
        # Done is complete when every member sent its own.
        self.group = {}  # publisher -> its group (0: alone)
        self.size = {}  # group -> members, as their announcements say
        self.rejected = 0  # samples of another layout, version or size
        self.duplicates = 0

    def record(self, publisher, name, security, seq, security_seq):
        stream, n = ((publisher, name), seq) if self.whole else (
            (publisher, name, security), security_seq)
        top = self.top.get(stream, 0)
        if n <= top:
            # One publisher's samples come in order over a link: a number at or below the
            # highest seen is a copy, never a late one to count again.
            self.duplicates += 1
            return False
        self.top[stream] = n
        self.received[stream] = self.received.get(stream, 0) + 1
        return True

    def streams(self):
        s = set(self.received)
        if self.whole:
            s |= {(p, BY_TAG[t][0]) for (p, t), last in self.done.items()
                  if t in BY_TAG and last > 0}
        return sorted(s)

    def missed(self, stream):
        last = self.top.get(stream, 0)
        if self.whole:
            last = max(last, self.done.get((stream[0], type_tag(stream[1])), 0))
        return last - self.received.get(stream, 0)

    def complete(self, now, linger):
        """A publisher's closing Done came and every record it announced is accounted for
        (the Done may overtake the last records); with a subset of securities the count per
        security is unknown: `linger` seconds after the Done."""
        for p, when in self.closed.items():
            g = self.group.get(p, 0)
            members = [p] if g == 0 else [q for q in self.closed if self.group.get(q) == g]
            if len(members) < (1 if g == 0 else self.size.get(g, 1)):
                continue
            if not self.whole:
                if now - max(self.closed[q] for q in members) >= linger:
                    return True
            elif all(self.top.get((q, BY_TAG[t][0]), 0) >= last
                     for (q, t), last in self.done.items() if q in members and t in BY_TAG):
                return True
        return False

    def per_type(self):
        counts = {}
        for stream, n in self.received.items():
            counts[stream[1]] = counts.get(stream[1], 0) + n
        return counts


def config(args):
    c = zenoh.Config()
    c.insert_json5("mode", '"peer"')
    endpoints = bool(args.connect or args.listen)
    if args.connect:
        c.insert_json5("connect/endpoints", json.dumps(args.connect))
    if endpoints:
        c.insert_json5("listen/endpoints", json.dumps(args.listen))
    # As fastfeed's own sessions: with endpoints, talk to those only (no scouting, no gossip).
    c.insert_json5("scouting/multicast/enabled", json.dumps(not endpoints))
    c.insert_json5("scouting/gossip/enabled", json.dumps(not endpoints))
    return c


def control(tally, b, now):
    """A control message: the publisher's Done per type (its last seq), then its closing one."""
    if len(b) != PREFIX.size + CONTROL.size or PREFIX.unpack_from(b)[1:] != (1, CONTROL_TAG):
        return
    kind, sender, tag, group, count = CONTROL.unpack_from(b, PREFIX.size)
    if kind in (DONE, PUBLISHER, PUBLISHER_ECHO):
        tally.group.setdefault(sender, group)
    if kind in (PUBLISHER, PUBLISHER_ECHO) and group:
        tally.size[group] = max(tally.size.get(group, 0), tag)
    if kind == DONE and tag == 0:
        tally.closed.setdefault(sender, now)
    elif kind == DONE:
        tally.done[(sender, tag)] = count


def line(sample, name, seq, record, as_json):
    if as_json:
        return to_json({"type": name, **record})
    fields = " ".join(f"{k}={v}" for k, v in record.items() if not isinstance(v, list))
    entries = "".join(f" {k}={len(v)}" for k, v in record.items() if isinstance(v, list))
    return f"{sample.key_expr} seq={seq} {name} {fields}{entries}"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connect", action="append", default=[], metavar="ENDPOINT",
                    help="connect to this Zenoh endpoint, e.g. tcp/10.0.0.1:7447 (repeatable)")
    ap.add_argument("--listen", action="append", default=[], metavar="ENDPOINT",
                    help="listen on this endpoint (repeatable); neither: multicast scouting")
    ap.add_argument("--feed", help="the publisher's --feed: subscribe to fastfeed/FEED/**, "
                    "say hello on its control channel (a publisher's --wait-subscribers "
                    "counts this subscriber) and stop at its Done")
    ap.add_argument("--key", help="key expression (default fastfeed/FEED/** with --feed, else "
                    "fastfeed/**), e.g. fastfeed/moex/marketdata/*")
    ap.add_argument("--count", type=int, help="stop after this many records")
    ap.add_argument("--json", action="store_true", help="one JSON object per record")
    ap.add_argument("--quiet", action="store_true", help="print only the final count")
    ap.add_argument("--screen", action="store_true", help="screen class: a full queue drops "
                    "its oldest sample (counted as missed) instead of holding Zenoh back")
    ap.add_argument("--queue", type=int, default=4096, help="samples queued (default 4096)")
    ap.add_argument("--idle-timeout", type=float, default=30.0,
                    help="stop after this many seconds without a sample (default 30)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    key = args.key or (f"fastfeed/{args.feed}/**" if args.feed else "fastfeed/**")
    session = zenoh.open(config(args))
    channel = zenoh.handlers.RingChannel if args.screen else zenoh.handlers.FifoChannel
    # Remote samples only, and hellos to remote sessions only: our own hello delivered to our
    # own full queue would block this thread on itself.
    remote = zenoh.Locality.REMOTE
    sub = session.declare_subscriber(key, channel(args.queue), allowed_origin=remote)
    hello = control_sub = None
    my_id = (os.getpid() ^ random.getrandbits(32)) & 0xFFFFFFFF
    if args.feed:
        control_key = f"fastfeed/{args.feed}/control"
        hello = session.declare_publisher(control_key, express=True, allowed_destination=remote)
        # The feed's Done, whatever --key takes.
        control_sub = session.declare_subscriber(
            control_key, zenoh.handlers.FifoChannel(256), allowed_origin=remote)
    last_hello = 0.0
    tally = Tally(whole_types(key))
    total = 0
    out = sys.stdout
    last_sample = time.monotonic()
    reason = "idle timeout"
    try:
        while True:
            now = time.monotonic()
            if hello is not None and now - last_hello >= HELLO_EVERY:
                hello.put(PREFIX.pack(WIRE_VERSION, 1, CONTROL_TAG) +
                          CONTROL.pack(HELLO, my_id, 0, 0, 0))
                last_hello = now
            while control_sub is not None and (c := control_sub.try_recv()) is not None:
                control(tally, c.payload.to_bytes(), now)
            sample = sub.try_recv()
            if sample is None:
                if tally.complete(now, LINGER):
                    reason = "publisher's Done"
                    break
                if now - last_sample > args.idle_timeout:
                    break
                time.sleep(0.001)
                continue
            last_sample = now
            b = sample.payload.to_bytes()
            wire, layout, tag = PREFIX.unpack_from(b) if len(b) >= PREFIX.size else (0, 0, 0)
            if wire != WIRE_VERSION:
                tally.rejected += 1
                continue
            if tag == CONTROL_TAG:
                if control_sub is None:
                    control(tally, b, now)
                continue
            if tag == ECHO_TAG:
                continue  # subscribers' latency echoes to the publisher
            spec = BY_TAG.get(tag)
            if spec is None or spec[1] != layout or not RECORD_OFFSET <= len(b) <= RECORD_OFFSET + spec[2]:
                tally.rejected += 1
                continue
            # Records are sent up to their last valid entry: the zeros after are left out.
            b = bytes(b) + bytes(RECORD_OFFSET + spec[2] - len(b))
            name, _, _, decode = spec
            seq, security_seq, _sent_ns, publisher = ENVELOPE.unpack_from(b, PREFIX.size)
            security = str(sample.key_expr).rsplit("/", 1)[-1]
            if not tally.record(publisher, name, security, seq, security_seq):
                continue
            total += 1
            if not args.quiet:
                out.write(line(sample, name, seq, decode(b[RECORD_OFFSET:]), args.json) + "\n")
            if args.count is not None and total >= args.count:
                reason = f"--count {args.count}"
                break
    except KeyboardInterrupt:
        reason = "interrupted"
    finally:
        if hello is not None:
            hello.put(PREFIX.pack(WIRE_VERSION, 1, CONTROL_TAG) +
                      CONTROL.pack(BYE, my_id, 0, 0, 0))
            time.sleep(0.2)  # closing at once can drop it; the publisher waits for it
        session.close()

    missed = sum(tally.missed(s) for s in tally.streams())
    per_type = ", ".join(f"{name} {n}" for name, n in sorted(tally.per_type().items()))
    out.write(f"python subscriber: received {total} records ({per_type}), missed {missed}, "
              f"duplicates {tally.duplicates}, rejected {tally.rejected}; stopped: {reason}\n")
    out.flush()
    done = reason == "publisher's Done"
    return 0 if reason.startswith("--count") or (done and missed == 0) else 1


if __name__ == "__main__":
    sys.exit(main())
