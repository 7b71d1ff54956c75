"""examples/python/subscribe.py against a real `fastfeed publish --bus zenoh`: the records it
decodes with `struct` from the documented layout are the ones fastfeed's own subscriber
receives, field for field, and its counts match the publisher's."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "python" / "subscribe.py"
TIMEOUT = 90

try:
    import zenoh  # noqa: F401
except ImportError:  # CI installs it (.ci/run); a bare venv fails loudly, not silently
    pytest.fail("the eclipse-zenoh package is missing: pip install eclipse-zenoh==1.10.2",
                pytrace=False)


def endpoint():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp/127.0.0.1:{s.getsockname()[1]}"


def python_subscriber(out, *args):
    """Writes to a file: a pipe read only at the end would fill, stop the subscriber, and
    hold the publisher, which waits for its bye."""
    return subprocess.Popen([sys.executable, str(SCRIPT), *args], stdout=out,
                            stderr=subprocess.STDOUT, text=True)


def run(fastfeed_bin, tmp_path, data, feed, py_args_list):
    """Publishes a generated file to fastfeed's own recorder subscriber and to one Python
    subscriber per entry of `py_args_list`; returns (publisher report, fastfeed's records,
    [(exit code, stdout lines, stderr) of each Python subscriber])."""
    file = tmp_path / f"{data}.dat"
    subprocess.run([fastfeed_bin, "generate", data, "-n", "2000", "-o", str(file)],
                   check=True, capture_output=True)
    ep = endpoint()
    outs = [open(tmp_path / f"py{i}.out", "w") for i in range(len(py_args_list))]
    pys = [python_subscriber(o, "--connect", ep, "--feed", feed, "--idle-timeout", "30", *a)
           for o, a in zip(outs, py_args_list)]
    dump, sub_json, pub_json = (tmp_path / n for n in ("rs.records", "sub.json", "pub.json"))
    rust = subprocess.Popen(
        [fastfeed_bin, "subscribe", "--bus", "zenoh", "--feed", feed, "--connect", ep,
         "--recorder", "--idle-timeout", "30", "--dump", str(dump),
         "--report-json", str(sub_json)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Waits for every subscriber's hello (the Python ones say hello too), and waits on
    # congestion rather than drop: every subscriber gets every record.
    pub = subprocess.run(
        [fastfeed_bin, "publish", data, "--bus", "zenoh", "--feed", feed, "--listen", ep,
         "--wait-subscribers", str(1 + len(pys)), "--block-when-congested", "-f", str(file),
         "--report-json", str(pub_json)],
        capture_output=True, text=True, timeout=TIMEOUT)
    assert pub.returncode == 0, pub.stdout + pub.stderr
    assert f"{1 + len(pys)} subscriber(s) ready" in pub.stderr, pub.stderr
    results = []
    for i, (p, o) in enumerate(zip(pys, outs)):
        p.wait(timeout=TIMEOUT)
        o.close()
        lines = (tmp_path / f"py{i}.out").read_text().splitlines()
        results.append((p.returncode, lines, ""))
    rust.communicate(timeout=TIMEOUT)
    assert json.loads(sub_json.read_text())["complete"] is True
    return json.loads(pub_json.read_text()), dump.read_text().splitlines(), results


def test_complex_records_equal_fastfeeds_own(fastfeed_bin, tmp_path):
    report, want, [(code, lines, err)] = run(fastfeed_bin, tmp_path, "complex", "pyc",
                                             [["--json"]])
    assert code == 0, "\n".join(lines[-3:]) + err
    *records, final = lines
    published = report["records"]
    assert published > 2000  # MarketData splits messages per security
    assert f"received {published} records" in final, final
    assert "missed 0, duplicates 0, rejected 0; stopped: publisher's Done" in final, final
    # Field for field, decimals and strings included, in fastfeed's own JSON.
    assert sorted(records) == sorted(want)
    md = [json.loads(r) for r in records if '"marketdata"' in r]
    assert any("MDEntryPx" in e for r in md for e in r["MDEntries"])
    assert all(r["parts"] >= 1 and r["part"] < r["parts"] for r in md)


def test_simple_text_one_security_and_count(fastfeed_bin, tmp_path):
    feed = "pys"
    report, want, results = run(fastfeed_bin, tmp_path, "simple", feed, [
        ["--key", f"fastfeed/{feed}/quote/7"],
        ["--count", "100", "--quiet"],
    ])
    (code, lines, err), (code_n, lines_n, err_n) = results
    want7 = [json.loads(r) for r in want if '"type":"quote"' in r]
    want7 = [r for r in want7 if r["security_id"] == 7]
    assert want7, "the generated file has quotes of security 7"
    assert code == 0, "\n".join(lines[-3:]) + err
    *records, final = lines
    assert len(records) == len(want7)
    for got, r in zip(records, want7):  # one security's records come in order
        assert got.startswith(f"fastfeed/{feed}/quote/7 seq="), got
        assert f" quote sequence_number={r['sequence_number']} " in got, got
        assert " security_id=7 " in got and f" price={r['price']}" in got, got
    assert f"received {len(want7)} records (quote {len(want7)}), missed 0" in final, final

    assert code_n == 0, "\n".join(lines_n) + err_n
    assert lines_n == [lines_n[-1]]  # --quiet: the count only
    assert "received 100 records" in lines_n[-1] and "stopped: --count 100" in lines_n[-1]
    assert report["records"] == len(want)


def test_a_publisher_group_ends_after_every_members_done(fastfeed_bin, tmp_path):
    """`publish opra --threads 2`: two sessions, one publisher group; the Python subscriber
    (listening, the threads connect to it) ends only after both threads' Done, with every
    record of both."""
    file = tmp_path / "opra.dat"
    subprocess.run([fastfeed_bin, "generate", "opra", "-n", "3000", "--channels", "4",
                    "-o", str(file)], check=True, capture_output=True)
    ep = endpoint()
    out = open(tmp_path / "py.out", "w")
    py = python_subscriber(out, "--listen", ep, "--feed", "pyg", "--idle-timeout", "30",
                           "--quiet")
    pub_json = tmp_path / "pub.json"
    pub = subprocess.run(
        [fastfeed_bin, "publish", "opra", "--channels", "4", "--threads", "2", "--bus",
         "zenoh", "--feed", "pyg", "--connect", ep, "--wait-subscribers", "1",
         "--block-when-congested", "--no-echo", "-f", str(file),
         "--report-json", str(pub_json)],
        capture_output=True, text=True, timeout=TIMEOUT)
    assert pub.returncode == 0, pub.stdout + pub.stderr
    py.wait(timeout=TIMEOUT)
    out.close()
    final = (tmp_path / "py.out").read_text().splitlines()[-1]
    report = json.loads(pub_json.read_text())
    threads = report["threads"]
    assert len(threads) == 2 and all(t["records"] > 0 for t in threads)
    assert py.returncode == 0, final
    assert f"received {report['records']} records" in final, final
    assert "missed 0" in final and "stopped: publisher's Done" in final, final
