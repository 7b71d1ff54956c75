"""fastfeed: FAST (FIX Adapted for STreaming) market data, decoded in Rust.

Templates
    ``Templates.from_file(path)`` / ``Templates.from_xml(text)`` compile FAST template XML;
    errors raise ``TemplateError`` with the spec code (``.code``), ``.line`` and ``.column``.

Messages
    ``Decoder(templates).decode(data)`` turns bytes into a list of dicts: ``templateId``,
    ``templateName``, then each present field by name. Decimals are ``decimal.Decimal``
    (exact, with the exponent sent), byte vectors ``bytes``, sequences lists of dicts.
    ``Decoder.iter_file(path, framing=...)`` iterates over a file in bounded memory.
    ``Encoder(templates).encode(messages)`` gives the bytes back. Bad data raises
    ``DecodeError`` with ``.code`` (the spec's D*/R* code), ``.packet``, ``.offset``,
    ``.template`` and ``.field``.

Tables
    ``read_table(templates, path, template, entries=..., framing=...)`` returns a
    ``pyarrow.Table`` typed from the template (uInt32 -> uint32, decimal -> decimal128,
    string -> string, byteVector -> binary, optional -> nullable), a row per message or per
    entry of a sequence. ``read_tables`` gives every template's table at once and
    ``read_batches`` streams a ``pyarrow.RecordBatchReader`` for files larger than memory.
    The tables are built in Rust and handed to pyarrow through the Arrow C data interface.

Books
    ``read_books(config, depth=5, securities=None)`` runs a feed's captures through the feed
    handler, as ``fastfeed handle CONFIG --captures`` does (lines A and B arbitrated, gaps
    recovered from the snapshot line), and returns a ``pyarrow.Table`` with a row per book
    change: time, channel, security, RptSeq, MsgSeqNum, state, then the best ``depth``
    levels a side (exact decimal128 prices, sizes, orders). ``read_trades(config)`` gives the
    trades the handler hands on the same way (price, size, aggressor). The schema's metadata
    holds each channel's counters. Instruments named by symbol (MOEX ASTS) get the id
    ``symbol_security(symbol, session)``. ``iter_books`` and ``iter_trades`` give the same
    rows a ``pyarrow.RecordBatch`` at a time, in bounded memory, for long captures.

Framings are those of the ``fastfeed`` command line: ``"raw"`` (one stream of messages, as
the MOEX captures), ``"len32le"`` (a 4-byte little-endian length before each packet),
``"block"`` (the FAST spec's blocks: each one's size as a stop-bit integer before it) and
``"pcap"``, with ``skip_header`` bytes before each packet's messages and
``reset_each_packet``.
"""

from ._native import (
    DecodeError,
    Decoder,
    EncodeError,
    Encoder,
    FastError,
    MessageIter,
    TableError,
    TemplateError,
    BatchIter,
    Templates,
    read_batches,
    iter_books,
    iter_trades,
    read_books,
    read_table,
    read_tables,
    read_trades,
    symbol_security,
)

__all__ = [
    "DecodeError",
    "Decoder",
    "EncodeError",
    "Encoder",
    "FastError",
    "MessageIter",
    "TableError",
    "TemplateError",
    "BatchIter",
    "Templates",
    "read_batches",
    "iter_books",
    "iter_trades",
    "read_books",
    "read_table",
    "read_tables",
    "read_trades",
    "symbol_security",
]
