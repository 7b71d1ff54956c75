"""Usage: python python/bench/speed.py target/release/fastfeed

read_table throughput against `fastfeed bench decode`, interleaved in one run so both
see the same machine load. MB/s counts FAST bytes (no length prefixes), as bench does.
Each round times `bench decode --passes 3` (its min), then each read_table mode PASSES times
in this process (its min): both sides are the best of three warm passes over the file."""
import subprocess, sys, time
import fastfeed

BIN = sys.argv[1]
C = str(__import__("pathlib").Path(__file__).resolve().parents[3] / "shared" / "corpus") + "/"
SETS = [
    ("complex30000", C + "mfast-complex/example.xml", C + "mfast-complex/complex30000.dat",
     ["--framing", "len32le"], dict(framing="len32le"), "MarketData", 1996192),
    ("moex increment_a", C + "moex-forts-2013/templates.xml", C + "moex-forts-2013/increment_a.dat",
     [], {}, "DefaultIncrementalRefreshMessage", 688083),
]
ROUNDS = 7
PASSES = 3
for name, tpl, dat, cli_args, kw, template, nbytes in SETS:
    t = fastfeed.Templates.from_file(tpl)
    bench, tables = [], {"entries": [], "messages": []}
    for _ in range(ROUNDS):
        out = subprocess.run([BIN, "bench", "decode", "-t", tpl, *cli_args, dat, "--passes", "3"],
                             capture_output=True, text=True, check=True).stdout
        line = [l for l in out.splitlines() if l.startswith("min")][0]
        bench.append(float(line.split()[3]))
        for mode, entries in (("entries", "MDEntries"), ("messages", None)):
            best = float("inf")
            for _ in range(PASSES):
                t0 = time.perf_counter()
                tab = fastfeed.read_table(t, dat, template, entries=entries, **kw)
                best = min(best, time.perf_counter() - t0)
                del tab
            tables[mode].append(nbytes / best / 1e6)
    b = max(bench)
    print(f"{name}: bench decode best {b:.1f} MB/s", end="")
    for mode, v in tables.items():
        print(f"; read_table {mode} best {max(v):.1f} MB/s ({max(v) / b:.0%})", end="")
    print(f"  [medians: bench {sorted(bench)[ROUNDS // 2]:.1f}, entries {sorted(tables['entries'])[ROUNDS // 2]:.1f}]")
