"""Type stubs of fastfeed's native module (re-exported by the fastfeed package)."""

import os
from decimal import Decimal
from typing import Any, Dict, Iterable, Iterator, List, Literal, Optional, Sequence, Union

import pyarrow

Message = Dict[str, Any]
"""``templateId``, ``templateName``, then each present field by name: int, Decimal, str,
bytes, list of dicts (a sequence), dict (a group or a nested message)."""

PathLike = Union[str, "os.PathLike[str]"]
Framing = Literal["raw", "len32le", "block", "pcap"]
Errors = Literal["raise", "skip"]

class FastError(Exception):
    """Base class of fastfeed's errors."""

class TemplateError(FastError):
    """An error in template XML."""
    code: str
    """The FAST spec's error code (S1..S5, D*)."""
    line: int
    column: int
    message: str

class DecodeError(FastError):
    """A decoding error."""
    code: Optional[str]
    """The spec's D*/R* code, or None (a truncated message, a limit)."""
    packet: Optional[int]
    """The 0-based packet (always 0 for a raw stream)."""
    offset: Optional[int]
    """The byte of the input where decoding failed."""
    template: Optional[str]
    field: Optional[str]
    kind: str
    hint: Optional[str]
    """What to try, where ``read_table``, ``read_tables``, ``read_batches`` or ``iter_file``
    found that the file's first packets decode with another ``skip_header`` /
    ``reset_each_packet`` (also appended to the message); else None. A batch of
    ``read_batches`` after its first fails with pyarrow's ``ArrowInvalid``, whose message
    ends with the same hint."""

class EncodeError(FastError):
    code: Optional[str]
    template: Optional[str]
    field: Optional[str]
    kind: str

class TableError(FastError):
    """A template a table cannot hold, or a decimal its column's scale cannot hold exactly."""

class Templates:
    """A compiled set of FAST templates."""
    @staticmethod
    def from_xml(xml: str) -> Templates: ...
    @staticmethod
    def from_file(path: PathLike) -> Templates: ...
    @property
    def names(self) -> List[str]: ...
    @property
    def ids(self) -> List[int]: ...
    def __len__(self) -> int: ...

class MessageIter(Iterator[Message]):
    """The messages of a file, read in bounded memory."""
    errors: int
    """Packets skipped with errors="skip"."""
    @property
    def packets(self) -> int: ...
    @property
    def capture(self) -> Optional[Dict[str, Optional[int]]]:
        """What a capture held, as read so far: frames, datagrams, selected, truncated,
        fragments, reassembled, fragments_lost, not_udp, bad_frames, unsupported_link,
        other_blocks, bytes, damaged_at (a byte offset or None). None for other inputs."""
        ...
    def __iter__(self) -> MessageIter: ...
    def __next__(self) -> Message: ...

class Decoder:
    """Decodes FAST messages; keeps the dictionaries between calls."""
    def __init__(self, templates: Templates, *, strict: bool = False) -> None: ...
    def decode(self, data: bytes) -> List[Message]: ...
    def reset(self) -> None: ...
    def iter_file(
        self,
        path: PathLike,
        *,
        framing: Framing = "raw",
        udp: Optional[str] = None,
        skip_header: int = 0,
        reset_each_packet: bool = False,
        errors: Errors = "raise",
    ) -> MessageIter: ...

class Encoder:
    """Encodes message dicts into the shortest FAST encoding; keeps the dictionaries."""
    def __init__(self, templates: Templates) -> None: ...
    def encode(self, messages: Union[Message, Iterable[Message]]) -> bytes: ...
    def reset(self) -> None: ...

def read_table(
    templates: Union[Templates, PathLike],
    path: PathLike,
    template: Optional[str] = None,
    *,
    entries: Optional[str] = None,
    framing: Framing = "raw",
    udp: Optional[str] = None,
    skip_header: int = 0,
    reset_each_packet: bool = False,
    strict: bool = False,
    batch_rows: int = 65536,
    decimal_scale: Optional[int] = None,
    errors: Errors = "raise",
    threads: int = 0,
) -> pyarrow.Table: ...

def read_tables(
    templates: Union[Templates, PathLike],
    path: PathLike,
    *,
    entries: Optional[str] = None,
    framing: Framing = "raw",
    udp: Optional[str] = None,
    skip_header: int = 0,
    reset_each_packet: bool = False,
    strict: bool = False,
    batch_rows: int = 65536,
    decimal_scale: Optional[int] = None,
    errors: Errors = "raise",
    threads: int = 0,
) -> Dict[str, pyarrow.Table]: ...

def read_batches(
    templates: Union[Templates, PathLike],
    path: PathLike,
    template: Optional[str] = None,
    *,
    entries: Optional[str] = None,
    framing: Framing = "raw",
    udp: Optional[str] = None,
    skip_header: int = 0,
    reset_each_packet: bool = False,
    strict: bool = False,
    batch_rows: int = 65536,
    decimal_scale: Optional[int] = None,
    errors: Errors = "raise",
) -> pyarrow.RecordBatchReader: ...

def read_books(
    config: PathLike,
    *,
    depth: int = 5,
    securities: Optional[Sequence[int]] = None,
) -> pyarrow.Table:
    """A feed's capture files (the TOML feed configuration of ``fastfeed handle``) through
    the feed handler, as ``fastfeed handle CONFIG --captures`` runs them: lines A and B
    arbitrated, gaps held and recovered from the snapshot line, a book per instrument.

    One row per book change: ``time`` (timestamp[ns, UTC]: the packet's pcap time, or its
    SendingTime in a raw or len32le capture), ``channel``, ``security``, ``rpt_seq``,
    ``msg_seq_num``, ``state`` (``live``, ``stale``, ``unknown``), ``from_snapshot``, then
    for K in 1..=depth ``bid_price_K`` (decimal128, exact), ``bid_size_K``,
    ``bid_orders_K`` and the same for ``offer_``, null past the book's end. ``securities``
    keeps those instruments' rows. ``table.schema.metadata[b"fastfeed.counters.<channel>"]``
    is each channel's counters as JSON (packets per line, gaps, recoveries, stale periods,
    silences, ...). A capture damaged part-way is read up to the damage, with a
    RuntimeWarning. Bad arguments or configurations raise ValueError."""

def read_trades(
    config: PathLike,
    *,
    securities: Optional[Sequence[int]] = None,
) -> pyarrow.Table:
    """A feed's capture files through the feed handler, as ``read_books`` runs them: one row
    per trade the handler hands on (each once, whichever line brought it first): ``time``,
    ``channel``, ``security``, ``rpt_seq``, ``msg_seq_num``, ``price`` (decimal128, exact;
    null where the feed sent none), ``size``, ``aggressor`` (``buy``, ``sell`` or null).
    Trades of an instrument before its first snapshot are not handed on. ``securities``
    keeps those instruments' rows; the schema's metadata holds each channel's counters."""

class BatchIter:
    """The rows of ``read_books`` or ``read_trades`` a ``pyarrow.RecordBatch`` at a time
    (``iter_books``, ``iter_trades``). The replay runs on a thread of its own, at most a
    batch ahead; dropping the iterator stops it. ``pyarrow.RecordBatchReader.from_batches(
    it.schema, it)`` makes it a stream for pyarrow's writers and datasets."""
    def __iter__(self) -> "BatchIter": ...
    def __next__(self) -> pyarrow.RecordBatch: ...
    @property
    def schema(self) -> pyarrow.Schema:
        """The schema of every batch (prices with the scale given, or the first batch's)."""
    @property
    def counters(self) -> Optional[Dict[str, Dict[str, int]]]:
        """Each channel's counters by channel name, once the last batch has been taken
        (None before): what ``read_books`` puts in its schema's metadata."""

def iter_books(
    config: PathLike,
    *,
    depth: int = 5,
    securities: Optional[Sequence[int]] = None,
    batch_rows: int = 65536,
    price_scale: Optional[int] = None,
) -> BatchIter:
    """``read_books``' rows in batches of ``batch_rows``, in bounded memory however long the
    captures. Every batch has one schema: its prices have ``price_scale`` fraction digits
    (0..=18), or as many as the first batch needs (a session starts with a snapshot of every
    instrument); a later price with more digits raises ValueError naming the scale to give.
    A configuration or capture that cannot be read raises ValueError at the call."""

def iter_trades(
    config: PathLike,
    *,
    securities: Optional[Sequence[int]] = None,
    batch_rows: int = 65536,
    price_scale: Optional[int] = None,
) -> BatchIter:
    """``read_trades``' rows in batches of ``batch_rows``, as ``iter_books`` gives books."""

def symbol_security(symbol: str, session: Optional[str] = None) -> int:
    """The security id fastfeed gives an instrument its venue names by Symbol and, where
    sent, TradingSessionID (MOEX ASTS): what ``read_books``/``read_trades`` put in
    ``security`` for it and what ``securities=`` takes; the same on every run and host,
    its top bit set."""
