"""Tables: typed from the template, the same values as `fastfeed decode` JSON row for row,
complex30000's entries, streaming batches, errors."""

import warnings
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fastfeed
from conftest import ROOT, corpus, json_messages
from test_decode import CORPUS_SETS, cli_args

COMPLEX = ("mfast-complex/example.xml", "mfast-complex/complex30000.dat")
ROOT_TEMPLATES = ROOT / "crates" / "sim" / "templates"


def flatten_groups(fields, instr_groups=()):
    """JSON groups are nested objects; table columns are `Group.Field`."""
    out = {}
    for k, v in fields.items():
        if isinstance(v, dict) and k not in ("templateId", "templateName"):
            for gk, gv in flatten_groups(v).items():
                out[f"{k}.{gk}"] = gv
        else:
            out[k] = v
    return out


def present(row):
    """A table row without its nulls (JSON leaves absent fields out), bytes as hex."""
    out = {}
    for k, v in row.items():
        if v is None:
            continue
        if isinstance(v, bytes):
            v = v.hex()
        elif isinstance(v, list):
            v = [present(e) for e in v]
        out[k] = v
    return out


def json_rows(msgs, template, entries=None):
    rows = []
    for m in msgs:
        if m["templateName"] != template:
            continue
        fields = flatten_groups({k: v for k, v in m.items() if k not in ("templateId", "templateName")})
        if entries is None:
            rows.append({k: [flatten_groups(e) for e in v] if isinstance(v, list) else v
                         for k, v in fields.items()})
            continue
        parent = {k: v for k, v in fields.items() if not isinstance(v, list)}
        for e in fields.get(entries, []):
            rows.append({**parent, **flatten_groups(e)})
    return rows


@pytest.mark.parametrize("name", list(CORPUS_SETS))
def test_every_corpus_table_holds_the_cli_json_values(cli, name):
    tpl, dat, framing = CORPUS_SETS[name]
    want = json_messages(cli, "-t", corpus(tpl), *cli_args(**framing), corpus(dat))
    t = fastfeed.Templates.from_file(corpus(tpl))
    tables = fastfeed.read_tables(t, corpus(dat), **framing)
    names = {m["templateName"] for m in want if len(m) > 2}
    assert set(tables) == names
    for template, table in tables.items():
        got = [present(r) for r in table.to_pylist()]
        assert got == json_rows(want, template), template


def test_complex30000_entries_table(cli):
    tpl, dat = map(corpus, COMPLEX)
    t = fastfeed.Templates.from_file(tpl)
    md = fastfeed.read_table(t, dat, "MarketData", entries="MDEntries", framing="len32le")
    rs = fastfeed.read_table(t, dat, "QuoteRequest", entries="RelatedSym", framing="len32le")
    # The file's 90,000 entries: 89,700 MDEntries and 300 RelatedSym.
    assert (md.num_rows, rs.num_rows) == (89_700, 300)
    assert md.num_rows + rs.num_rows == 90_000
    s = md.schema
    expect = {
        "ApplVerID": (pa.string(), False),
        "MsgSeqNum": (pa.uint32(), False),
        "MDUpdateAction": (pa.uint32(), False),
        "MDPriceLevel": (pa.uint32(), True),
        "MDEntryType": (pa.string(), False),
        "MDEntryPx": (pa.decimal128(38, 0), False),
        "MDEntrySize": (pa.int32(), True),
        "NetChgPrevDay": (pa.decimal128(38, 0), True),
        "TradingSessionID": (pa.string(), True),
    }
    for name, (ty, nullable) in expect.items():
        assert (s.field(name).type, s.field(name).nullable) == (ty, nullable), name
    assert "MDEntries" not in s.names
    assert rs.schema.field("OrderQty").type == pa.uint64()
    # Every value, row for row, as the CLI decodes it.
    want = json_messages(cli, "-t", tpl, "--framing", "len32le", dat)
    assert [present(r) for r in md.to_pylist()] == json_rows(want, "MarketData", "MDEntries")
    assert [present(r) for r in rs.to_pylist()] == json_rows(want, "QuoteRequest", "RelatedSym")
    first = md.slice(0, 1).to_pylist()[0]
    assert isinstance(first["MDEntryPx"], Decimal)


def test_message_rows_hold_sequences_as_lists():
    t = fastfeed.Templates.from_file(corpus(COMPLEX[0]))
    md = fastfeed.read_table(t, corpus(COMPLEX[1]), "MarketData", framing="len32le")
    assert md.num_rows == 29_700
    entry = md.schema.field("MDEntries").type
    assert pa.types.is_list(entry) and entry.value_type.field("RptSeq").type == pa.uint32()
    assert pc.sum(pc.list_value_length(md["MDEntries"])).as_py() == 89_700


def test_batches_stream_with_one_schema():
    t = fastfeed.Templates.from_file(corpus(COMPLEX[0]))
    reader = fastfeed.read_batches(t, corpus(COMPLEX[1]), "MarketData", entries="MDEntries",
                                   framing="len32le", batch_rows=10_000)
    assert isinstance(reader, pa.RecordBatchReader)
    batches = list(reader)
    assert len(batches) >= 9
    assert all(b.schema == batches[0].schema for b in batches)
    assert sum(b.num_rows for b in batches) == 89_700
    whole = fastfeed.read_table(t, corpus(COMPLEX[1]), "MarketData", entries="MDEntries",
                                framing="len32le")
    assert pa.Table.from_batches(batches).equals(whole)


def test_decimal_columns_widen_exactly_across_batches():
    # MOEX prices come with exponents 0..3; small batches see new exponents late.
    t = fastfeed.Templates.from_file(corpus("moex-forts-2013/templates.xml"))
    snap = corpus("moex-forts-2013/snapshot.dat")
    table = fastfeed.read_table(t, snap, "DefaultSnapshotMessage", entries="MDEntries",
                                batch_rows=500)
    whole = fastfeed.read_table(t, snap, "DefaultSnapshotMessage", entries="MDEntries")
    assert table.equals(whole)
    msgs = list(fastfeed.Decoder(t).iter_file(snap))
    want = [e["MDEntryPx"] for m in msgs if m["templateName"] == "DefaultSnapshotMessage"
            for e in m["MDEntries"] if "MDEntryPx" in e]
    got = [v for v in table["MDEntryPx"].to_pylist() if v is not None]
    assert got == want
    with pytest.raises(fastfeed.TableError) as e:
        fastfeed.read_table(t, corpus("moex-forts-2013/increment_a.dat"),
                            "DefaultIncrementalRefreshMessage", entries="MDEntries",
                            decimal_scale=-1)
    assert "scale" in str(e.value)


def test_table_errors_raise_or_skip(tmp_path):
    tpl, dat = map(corpus, COMPLEX)
    data = dat.read_bytes()
    packets, pos = [], 0
    while pos < len(data) and len(packets) < 300:
        n = int.from_bytes(data[pos:pos + 4], "little")
        packets.append(bytearray(data[pos + 4:pos + 4 + n]))
        pos += 4 + n
    for i in (20, 200):
        p = packets[i]
        p[len(p) // 2:] = bytes(len(p) - len(p) // 2)
    f = tmp_path / "torn.dat"
    f.write_bytes(b"".join(len(p).to_bytes(4, "little") + bytes(p) for p in packets))
    with pytest.raises(fastfeed.DecodeError) as e:
        fastfeed.read_table(tpl, f, "MarketData", entries="MDEntries", framing="len32le")
    assert e.value.packet == 20
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        table = fastfeed.read_table(tpl, f, "MarketData", entries="MDEntries",
                                    framing="len32le", errors="skip")
    assert any("2 decode errors skipped" in str(x.message) for x in w)
    good = list(fastfeed.Decoder(fastfeed.Templates.from_file(tpl)).iter_file(
        f, framing="len32le", errors="skip"))
    assert table.num_rows == sum(len(m.get("MDEntries", [])) for m in good)
    with pytest.raises(ValueError, match="template"):
        fastfeed.read_table(tpl, f, framing="len32le")
    with pytest.raises(ValueError):
        fastfeed.read_table(tpl, f, "MarketData", errors="ignore")
    with pytest.raises(fastfeed.TableError, match="no sequence"):
        fastfeed.read_table(tpl, f, "QuoteRequest", entries="MDEntries", framing="len32le")


def test_a_pcap_capture_reads_like_the_cli(cli, tmp_path):
    """A CME-style capture (lines A and B and the snapshot line, generated by the CLI): the
    datagrams of one group, as messages and as a table, hold what `fastfeed decode` prints."""
    pcap = tmp_path / "cme.pcap"
    out = cli("generate", "cme", "-n", "500", "-o", pcap)
    assert out.returncode == 0, out.stderr.decode()
    tpl = fastfeed.Templates.from_file(ROOT_TEMPLATES / "cme.xml")
    group = "239.255.90.1:14310"
    opts = dict(udp=group, skip_header=5, reset_each_packet=True)
    want = json_messages(cli, "-t", ROOT_TEMPLATES / "cme.xml", "--framing", "pcap",
                         "--udp", group, "--skip-header", "5", "--reset-each-packet", pcap)
    assert len(want) == 500
    got = list(fastfeed.Decoder(tpl).iter_file(pcap, framing="pcap", **opts))
    assert [m["MsgSeqNum"] for m in got] == [m["MsgSeqNum"] for m in want]
    # Known by its magic number too, without framing="pcap".
    table = fastfeed.read_table(tpl, pcap, "MDIncRefresh", entries="MDEntries", **opts)
    rows = json_rows(want, "MDIncRefresh", "MDEntries")
    assert table.num_rows == len(rows) > 500
    assert [present(r) for r in table.to_pylist()] == rows
    # Without udp=, every line's datagrams: more messages than one line's.
    every = list(fastfeed.Decoder(tpl).iter_file(pcap, skip_header=5, reset_each_packet=True))
    assert len(every) > 2 * len(got)
    with pytest.raises(ValueError, match="GROUP:PORT"):
        fastfeed.read_table(tpl, pcap, "MDIncRefresh", udp="nowhere")
    with pytest.raises(OSError, match="not one"):
        fastfeed.read_table(tpl, corpus(COMPLEX[1]), "MDIncRefresh", udp=group)


def test_a_fragmented_capture_reads_whole_and_its_losses_are_told(cli, tmp_path):
    """The same feed sent on a small-MTU link (most datagrams in IPv4 fragments) gives the
    same messages and table; the iterator's counts say what was put together, and a capture
    cut short warns that data was lost."""
    whole, frag = tmp_path / "cme.pcap", tmp_path / "cme-frag.pcap"
    for path, extra in ((whole, ()), (frag, ("--mtu", "96"))):
        out = cli("generate", "cme", "-n", "500", *extra, "-o", path)
        assert out.returncode == 0, out.stderr.decode()
    tpl = fastfeed.Templates.from_file(ROOT_TEMPLATES / "cme.xml")
    opts = dict(udp="239.255.90.1:14310", skip_header=5, reset_each_packet=True)
    it = fastfeed.Decoder(tpl).iter_file(frag, **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = list(it)
    assert got == list(fastfeed.Decoder(tpl).iter_file(whole, **opts))
    counts = it.capture
    assert counts["reassembled"] > 100 and counts["fragments_lost"] == 0
    assert counts["frames"] == counts["datagrams"] - counts["reassembled"] + counts["fragments"]
    assert counts["selected"] == 500 and counts["damaged_at"] is None
    table = fastfeed.read_table(tpl, frag, "MDIncRefresh", entries="MDEntries", **opts)
    assert table.equals(fastfeed.read_table(tpl, whole, "MDIncRefresh", entries="MDEntries", **opts))
    assert fastfeed.Decoder(tpl).iter_file(corpus(COMPLEX[1]), framing="len32le").capture is None
    # Cut in the middle of a record: the frames before it are read, and the loss is told.
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(frag.read_bytes()[: frag.stat().st_size // 2 + 7])
    with pytest.warns(RuntimeWarning, match="data lost in the capture.*damaged at byte"):
        part = fastfeed.read_table(tpl, cut, "MDIncRefresh", entries="MDEntries", **opts)
    assert 0 < part.num_rows < table.num_rows
    it = fastfeed.Decoder(tpl).iter_file(cut, **opts)
    with pytest.warns(RuntimeWarning, match="data lost"):
        assert 0 < len(list(it)) < 500
    assert it.capture["damaged_at"] is not None


def test_blocks_on_many_threads_make_the_same_table(cli, tmp_path):
    """Packets that each reset the dictionaries decode in blocks on workers: the same table as
    on one thread, for a file of several 4 MiB blocks."""
    dat = tmp_path / "complex.dat"
    out = cli("generate", "complex", "-n", "150000", "-o", dat)
    assert out.returncode == 0, out.stderr.decode()
    assert dat.stat().st_size > 2 * 4 * 1024 * 1024
    tpl = ROOT_TEMPLATES / "complex.xml"
    opts = dict(entries="MDEntries", framing="len32le", skip_header=4, reset_each_packet=True)
    one = fastfeed.read_table(tpl, dat, "MarketData", threads=1, **opts)
    many = fastfeed.read_table(tpl, dat, "MarketData", threads=3, **opts)
    assert one.num_rows > 150000
    assert many.equals(one)
    # Every template's table at once, in blocks too: the same tables.
    all_one = fastfeed.read_tables(tpl, dat, threads=1, **opts)
    all_many = fastfeed.read_tables(tpl, dat, threads=3, **opts)
    assert sorted(all_many) == sorted(all_one)
    assert {"MarketData", "QuoteRequest"} <= set(all_one)
    assert all_one["MarketData"].equals(one)
    for name, table in all_one.items():
        assert all_many[name].equals(table), name


def test_templates_that_share_a_name_get_tables_of_their_own(tmp_path):
    # As Shanghai's Level-2 file does: two templates named alike, told apart by their ids.
    t = fastfeed.Templates.from_xml(
        '<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">'
        '<template name="Trade" id="1"><uInt32 name="Price"/></template>'
        '<template name="Trade" id="2"><uInt32 name="Qty"/></template></templates>')
    assert t.names == ["Trade", "Trade"]
    data = fastfeed.Encoder(t).encode([
        {"templateId": 1, "Price": 5}, {"templateId": 2, "Qty": 6}, {"templateId": 2, "Qty": 7}])
    f = tmp_path / "trades.dat"
    f.write_bytes(data)
    tables = fastfeed.read_tables(t, f)
    assert sorted(tables) == ["Trade-1", "Trade-2"]
    assert tables["Trade-2"].column("Qty").to_pylist() == [6, 7]
    with pytest.raises(ValueError, match=r"templates \[1, 2\] are all named"):
        fastfeed.read_table(t, f, "Trade")
    assert fastfeed.read_table(t, f, "1").column("Price").to_pylist() == [5]
    with pytest.raises(KeyError, match="name one by its id"):
        fastfeed.Encoder(t).encode({"templateName": "Trade", "Price": 1})
