"""read_books: a feed's captures through the feed handler into one table of book changes,
row for row what `fastfeed book --captures --json` prints for an instrument."""

import json
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fastfeed
from conftest import ROOT

MOEX = ROOT / "configs" / "moex-forts.toml"
SECURITY = 49630790


def cme_feed(cli, tmp_path, messages):
    """The simulator's CME-style feed (lines A, B and snapshot in one pcap) and its
    configuration: (pcap, config, templates)."""
    pcap, cfg = tmp_path / "cme.pcap", tmp_path / "cme.toml"
    assert cli("generate", "cme", "-n", str(messages), "-o", pcap).returncode == 0
    templates = ROOT / "crates" / "sim" / "templates" / "cme.xml"
    cfg.write_text((ROOT / "configs" / "cme.toml").read_text()
                   .replace('"../crates/sim/templates/cme.xml"', json.dumps(str(templates)))
                   .replace('"cme/sample.pcap"', json.dumps(str(pcap))))
    return pcap, cfg, templates


def test_book_changes_match_the_handler_row_for_row(cli):
    t = fastfeed.read_books(MOEX, depth=5)
    assert t.schema.field("time").type == pa.timestamp("ns", tz="UTC")
    assert t.schema.field("bid_price_1").type == pa.decimal128(38, 0)
    assert t.schema.field("offer_orders_5").type == pa.uint32()
    out = cli("book", MOEX, "--captures", "--security", SECURITY, "--json")
    assert out.returncode == 0, out.stderr
    want = [json.loads(l, parse_float=Decimal, parse_int=Decimal) for l in out.stdout.splitlines()]
    rows = t.filter(pc.equal(t["security"], SECURITY)).to_pylist()
    assert len(rows) == len(want) > 100
    for r, w in zip(rows, want):
        assert (r["rpt_seq"], r["msg_seq_num"]) == (w["rptSeq"], w["msgSeqNum"])
        assert (r["state"], r["from_snapshot"]) == (w["state"], w["fromSnapshot"])
        assert r["channel"] == "FUT-BOOK-5"
        for side in ("bid", "offer"):
            levels = w[side + "s"]
            for k in range(1, 6):
                got = (r[f"{side}_price_{k}"], r[f"{side}_size_{k}"], r[f"{side}_orders_{k}"])
                if k <= len(levels):
                    assert got == tuple(levels[k - 1]), (r, w)
                else:
                    assert got == (None, None, None)
    # The times are the packets' SendingTimes, in order.
    times = t["time"].to_pylist()
    assert times == sorted(times) and times[0].year == 2013
    # Every instrument of the channel, and the handler's counters in the metadata.
    assert len(pc.unique(t["security"])) == 11
    counters = json.loads(t.schema.metadata[b"fastfeed.counters.FUT-BOOK-5"])
    assert counters["synced"] == 11 and counters["book_errors"] == 0
    assert counters["packets_a"] == 8_101 and counters["packets_b"] == 8_088


def test_securities_and_depth_select():
    one = fastfeed.read_books(MOEX, depth=1, securities=[SECURITY])
    assert set(one["security"].to_pylist()) == {SECURITY}
    assert "bid_price_2" not in one.column_names and "offer_price_1" in one.column_names
    assert one.num_rows == fastfeed.read_books(MOEX, securities=[SECURITY]).num_rows
    assert fastfeed.read_books(MOEX).num_rows > one.num_rows


def test_bad_arguments_are_errors(tmp_path):
    with pytest.raises(ValueError, match="depth"):
        fastfeed.read_books(MOEX, depth=0)
    with pytest.raises(ValueError, match="missing.toml"):
        fastfeed.read_books(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text(MOEX.read_text().replace('profile = "moex-forts"', 'profile = "nowhere"'))
    with pytest.raises(ValueError, match="nowhere"):
        fastfeed.read_books(bad)


def test_trades_are_those_of_the_decoded_feed(cli, tmp_path):
    pcap, cfg, templates = cme_feed(cli, tmp_path, 3000)
    t = fastfeed.read_trades(cfg)
    assert t.column_names == ["time", "channel", "security", "rpt_seq", "msg_seq_num",
                              "price", "size", "aggressor"]
    counters = json.loads(t.schema.metadata[b"fastfeed.counters.ES-310"])
    assert t.num_rows == counters["trades"] > 100
    # Line A decoded on its own: every trade entry (MDEntryType 2) by security and RptSeq.
    out = cli("decode", "-t", templates, "--udp", "239.255.90.1:14310", "--skip-header", "5",
              "--reset-each-packet", pcap)
    assert out.returncode == 0, out.stderr
    decoded = []
    for line in out.stdout.splitlines():
        m = json.loads(line, parse_float=Decimal)
        for e in m.get("MDEntries", []):
            if e["MDEntryType"] == "2":
                side = {1: "buy", 2: "sell"}.get(e.get("AggressorSide"))
                decoded.append((e["SecurityID"], e["RptSeq"], m["MsgSeqNum"],
                                e.get("MDEntryPx"), e.get("MDEntrySize"), side))
    rows = [(r["security"], r["rpt_seq"], r["msg_seq_num"], r["price"], r["size"], r["aggressor"])
            for r in t.to_pylist()]
    # The handler's trades are the feed's, in its order (those before an instrument's first
    # snapshot are not handed on), with the same values.
    it = iter(decoded)
    assert all(r in it for r in rows), "the handler's trades are not a subsequence of the feed's"
    assert len(rows) > len(decoded) // 2
    one = fastfeed.read_trades(cfg, securities=[rows[0][0]])
    assert one.num_rows == sum(r[0] == rows[0][0] for r in rows)


def test_symbol_ids_are_the_command_lines(cli):
    out = cli("book", MOEX, "--captures", "--symbol", "USD000UTSTOM:CETS")
    said = out.stdout.decode() + out.stderr.decode()
    want = int(said.split("changes of security ")[1].split()[0])
    assert fastfeed.symbol_security("USD000UTSTOM", "CETS") == want
    assert want >> 63 == 1
    assert fastfeed.symbol_security("USD000UTSTOM") != want
    assert fastfeed.symbol_security("USD000UTSTOM", "") == fastfeed.symbol_security("USD000UTSTOM")


def test_the_books_command_writes_the_same_tables(cli, tmp_path):
    import pyarrow.feather as feather
    import pyarrow.parquet as pq
    out = cli("books", MOEX, "-o", tmp_path / "books.parquet")
    assert out.returncode == 0, out.stderr
    assert b"12461 book changes" in out.stderr
    want = fastfeed.read_books(MOEX).replace_schema_metadata(None)
    assert pq.read_table(tmp_path / "books.parquet").equals(want)
    out = cli("books", MOEX, "-o", tmp_path / "one.arrow", "--depth", "2",
              "--security", SECURITY)
    assert out.returncode == 0, out.stderr
    one = fastfeed.read_books(MOEX, depth=2, securities=[SECURITY]).replace_schema_metadata(None)
    assert feather.read_table(tmp_path / "one.arrow").equals(one)
    out = cli("books", MOEX, "-o", tmp_path / "t.parquet", "--trades")
    assert out.returncode == 0 and b"0 trades" in out.stderr
    assert pq.read_table(tmp_path / "t.parquet").num_rows == 0
    assert cli("books", MOEX, "-o", tmp_path / "x.parquet", "--depth", "0").returncode != 0
    # Written a thousand rows at a time: the same table.
    out = cli("books", MOEX, "-o", tmp_path / "batched.parquet", "--batch-rows", "1000")
    assert out.returncode == 0, out.stderr
    assert pq.ParquetFile(tmp_path / "batched.parquet").metadata.num_rows == 12_461
    assert pq.read_table(tmp_path / "batched.parquet").equals(want)


def test_the_books_command_keeps_prices_exact_or_says_which_scale(cli, tmp_path):
    import pyarrow.parquet as pq
    _, cfg, _ = cme_feed(cli, tmp_path, 2000)
    # The feed's prices have two fraction digits: a scale of one cannot hold them.
    out = cli("books", cfg, "-o", tmp_path / "t1.parquet", "--trades", "--price-scale", "1")
    assert out.returncode != 0 and b"give a price scale of 2" in out.stderr, out.stderr
    out = cli("books", cfg, "-o", tmp_path / "t4.parquet", "--trades", "--price-scale", "4",
              "--batch-rows", "100")
    assert out.returncode == 0, out.stderr
    t = pq.read_table(tmp_path / "t4.parquet")
    assert t.schema.field("price").type == pa.decimal128(38, 4)
    want = fastfeed.read_trades(cfg)
    assert want.schema.field("price").type == pa.decimal128(38, 2)
    assert t["price"].to_pylist() == want["price"].to_pylist()


def test_batches_of_books_are_the_table_in_pieces():
    whole = fastfeed.read_books(MOEX, depth=3)
    it = fastfeed.iter_books(MOEX, depth=3, batch_rows=1000)
    assert it.counters is None
    batches = list(it)
    assert [b.num_rows for b in batches[:-1]] == [1000] * (len(batches) - 1)
    assert len(batches) == 13 and batches[-1].num_rows == 12_461 - 12_000
    assert all(b.schema == it.schema for b in batches)
    got = pa.Table.from_batches(batches, it.schema)
    assert got.equals(whole.replace_schema_metadata(None))
    # The counters, once the last batch is taken, are the table's metadata's.
    want = json.loads(whole.schema.metadata[b"fastfeed.counters.FUT-BOOK-5"])
    assert it.counters == {"FUT-BOOK-5": want}
    # pyarrow takes the iterator as a stream, e.g. for a Parquet file or a dataset.
    it = fastfeed.iter_trades(MOEX, securities=[SECURITY])
    reader = pa.RecordBatchReader.from_batches(it.schema, it)
    assert reader.read_all().num_rows == fastfeed.read_trades(MOEX, securities=[SECURITY]).num_rows


def test_batches_stop_when_dropped_and_say_what_is_wrong(cli, tmp_path):
    with pytest.raises(ValueError, match="missing.toml"):
        fastfeed.iter_books(tmp_path / "missing.toml")
    for bad in [dict(batch_rows=0), dict(price_scale=19), dict(depth=65)]:
        with pytest.raises(ValueError):
            fastfeed.iter_books(MOEX, **bad)
    # Dropped after one batch: the replay thread stops, and a new one runs whole.
    it = fastfeed.iter_books(MOEX, batch_rows=10)
    assert next(it).num_rows == 10
    del it
    assert sum(b.num_rows for b in fastfeed.iter_books(MOEX, batch_rows=5000)) == 12_461
    # A price scale too small for a later batch's prices: raised when that batch comes.
    _, cfg, _ = cme_feed(cli, tmp_path, 2000)
    with pytest.raises(ValueError, match="give a price scale of 2"):
        list(fastfeed.iter_trades(cfg, price_scale=1))
    t = pa.Table.from_batches(list(fastfeed.iter_trades(cfg, price_scale=4, batch_rows=50)))
    assert t.schema.field("price").type == pa.decimal128(38, 4)
    assert t["price"].to_pylist() == fastfeed.read_trades(cfg)["price"].to_pylist()
