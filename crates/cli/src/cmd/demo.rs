//! `fastfeed demo`: the whole system on this host, as separate processes: generate data,
//! start a subscriber and the decoding publisher, multicast the packets over loopback, and
//! print both reports.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;

use super::bus::BusKind;
use super::generate::{DataSet, GenerateArgs};
use super::multicast::FaultArgs;
use super::multicast::Pacing;
use crate::out::{out, outln};
use crate::{input, signals};

#[derive(Args, Clone)]
pub struct DemoArgs {
    /// Which simulated data to generate and send.
    #[arg(value_enum, default_value = "simple")]
    pub data: DataSet,
    /// Messages to generate.
    #[arg(short = 'n', long, default_value_t = 30_000)]
    pub count: usize,
    /// Multicast group and port the packets are sent to over loopback (by default one of
    /// this demo's own, from its process id, so two demos at once never mix).
    #[arg(short = 'g', long)]
    pub group: Option<SocketAddrV4>,
    /// The bus that carries the records from the publisher to the subscriber.
    #[arg(long, value_enum, default_value_t = BusKind::Shm)]
    pub bus: BusKind,
    /// With --bus zenoh: the publisher listens here and the subscriber connects to it
    /// (default: a free loopback port).
    #[arg(long, value_name = "ENDPOINT")]
    pub zenoh_endpoint: Option<String>,
    /// With --bus zenoh: the publisher sends each record at once (`publish --express`)
    /// instead of letting Zenoh batch it with the next ones.
    #[arg(long)]
    pub express: bool,
    /// With --bus zenoh: a Zenoh configuration (JSON5) for both the publisher and the
    /// subscriber, as `--zenoh-config` of `publish` and `subscribe` (e.g.
    /// configs/zenoh/low-latency.json5).
    #[arg(long, value_name = "FILE")]
    pub zenoh_config: Option<PathBuf>,
    /// Largest packet in bytes (as `generate -p`). A packet's records are published one after
    /// another, so each record's round trip includes the records before it in its packet:
    /// small packets (`-p 100`: about 6 simple messages, against 67 at 1024) show the path's
    /// latency without that queueing.
    #[arg(short = 'p', long, default_value_t = 1024)]
    pub max_packet: usize,
    /// Pause between packets, in microseconds.
    #[arg(short = 's', long, default_value_t = 50)]
    pub sleep_us: u64,
    /// How the multicaster waits the pause: spin (exact, a busy process) or sleep (late by
    /// the timer's slack, idle). Default: sleep when the three processes outnumber the
    /// cores less one, else spin.
    #[arg(long, value_enum)]
    pub pacing: Option<Pacing>,
    /// Where to write the generated data (a temporary folder by default).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write each record the subscriber receives to this file (JSON Lines).
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Draw the publisher's latency percentiles into this PNG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write the publisher's percentile distributions (HdrHistogram text) here.
    #[arg(long)]
    pub histogram: Option<PathBuf>,
    /// Write publisher.json and subscriber.json, every counter of the reports, here.
    #[arg(long, value_name = "DIR")]
    pub report_json: Option<PathBuf>,
    /// Faults for the multicaster to inject.
    #[command(flatten)]
    pub faults: FaultArgs,
}

fn spawn(args: &[String], stdout: Stdio) -> Result<Child> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().context("locating the fastfeed executable")?;
    Command::new(exe)
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::inherit())
        // A process group of its own: Ctrl-C reaches the demo alone, which passes it on
        // once, so each child stops with its partial report.
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting fastfeed {}", args.join(" ")))
}

/// A TCP endpoint on loopback whose port was free a moment ago.
fn free_loopback_endpoint() -> Result<String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(format!("tcp/127.0.0.1:{}", l.local_addr()?.port()))
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A child of the demo, with its standard output read by a thread (so a child never blocks
/// on a full pipe, and the demo never blocks on a child).
struct Running {
    name: &'static str,
    child: Child,
    status: Option<std::process::ExitStatus>,
    output: Option<std::thread::JoinHandle<String>>,
}

impl Running {
    fn new(name: &'static str, mut child: Child, lines: Option<Sender<String>>) -> Running {
        let output = child.stdout.take().map(|out| {
            std::thread::spawn(move || {
                let mut out = BufReader::new(out);
                let mut first = String::new();
                if let Some(tx) = lines {
                    let _ = out.read_line(&mut first);
                    let _ = tx.send(first.trim().to_string());
                    first.clear();
                }
                let _ = out.read_to_string(&mut first);
                first
            })
        });
        Running {
            name,
            child,
            status: None,
            output,
        }
    }

    /// Whether it ended (noting its status).
    fn ended(&mut self) -> Result<bool> {
        if self.status.is_none() {
            self.status = self.child.try_wait()?;
        }
        Ok(self.status.is_some())
    }

    fn failed(&self) -> bool {
        self.status.is_some_and(|s| !s.success())
    }

    /// Ended unable to run (exit 2 or more, or a signal), not merely with records missing
    /// (exit 1): the rest of the demo cannot go on.
    fn broke(&self) -> bool {
        self.status.is_some_and(|s| s.code().is_none_or(|c| c >= 2))
    }

    /// Asks it to stop (as Ctrl-C), waits up to `grace`, then kills it.
    fn stop(&mut self, grace: Duration) -> Result<()> {
        if self.ended()? {
            return Ok(());
        }
        signals::interrupt(&self.child);
        let deadline = Instant::now() + grace;
        while !self.ended()? && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !self.ended()? {
            eprintln!("fastfeed demo: the {} did not stop: killed", self.name);
            let _ = self.child.kill();
            self.status = Some(self.child.wait()?);
        }
        Ok(())
    }

    fn output(&mut self) -> String {
        self.output
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

/// Removes the demo's own temporary folder when the demo ends, however it ends.
struct TempDir(Option<PathBuf>);

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

pub fn run(a: DemoArgs) -> Result<ExitCode> {
    match a.data {
        // The publisher would take the pcap for len32le packets and the multicaster fail.
        DataSet::Cme => anyhow::bail!(
            "the demo runs simple or complex data; cme is a feed of lines A, B and snapshot \
             for the feed handler: `fastfeed generate cme -o configs/cme/sample.pcap`, then \
             `fastfeed handle configs/cme.toml --captures` (or `fastfeed replay \
             configs/cme.toml` beside a live `handle`)"
        ),
        DataSet::Simple | DataSet::Complex | DataSet::Opra => {}
    }
    if a.bus == BusKind::Shm
        && (a.express || a.zenoh_endpoint.is_some() || a.zenoh_config.is_some())
    {
        anyhow::bail!("--express, --zenoh-endpoint and --zenoh-config are for --bus zenoh");
    }
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("fastfeed demo: {}", fastfeed_net::LOOPBACK_HINT);
        eprintln!("(or run the publisher from the file: fastfeed publish -f FILE)");
        return Ok(ExitCode::from(3));
    }
    // Every output path checked now, not after the run.
    for (flag, path) in [
        ("--dump", &a.dump),
        ("--plot", &a.plot),
        ("--histogram", &a.histogram),
    ] {
        if let Some(p) = path {
            input::writable(p, flag)?;
        }
    }
    if let Some(d) = &a.report_json {
        make_dir(d, "--report-json")?;
    }
    let (dir, _cleanup) = match &a.dir {
        Some(d) => {
            make_dir(d, "--dir")?;
            (d.clone(), TempDir(None))
        }
        None => {
            let d = std::env::temp_dir().join(format!("fastfeed-demo-{}", std::process::id()));
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
            (d.clone(), TempDir(Some(d)))
        }
    };
    signals::install();
    let data_name = format!("{:?}", a.data).to_lowercase();
    let file = dir.join(format!("{data_name}{}.dat", a.count));
    let gen = GenerateArgs {
        data: a.data,
        output: file.clone(),
        count: a.count,
        max_packet: a.max_packet,
        seq: 3.0,
        nosplit: false,
        securities: None,
        channels: OPRA_CHANNELS,
        seed: 1,
        mtu: None,
    };
    super::generate::run(gen)?;

    let conditions = Conditions::now(a.sleep_us, WARMUP.min(a.count as u64 / 10), a.pacing);
    if conditions.crowded() {
        eprintln!("{}", conditions.warning());
    }
    let feed = format!("demo{}", std::process::id());
    let group = a.group.unwrap_or_else(own_group).to_string();
    let bus = a.bus.name();
    let json_in = |name: &str| a.report_json.as_ref().map(|d| d.join(name));
    let mut sub_args = strings(&[
        "subscribe",
        "--feed",
        &feed,
        "--bus",
        &bus,
        "--spin",
        "--idle-timeout",
        "20",
    ]);
    let sub_files = [
        ("--dump", a.dump.clone()),
        ("--report-json", json_in("subscriber.json")),
    ];
    for (flag, path) in sub_files {
        if let Some(p) = path {
            sub_args.extend([flag.to_string(), p.display().to_string()]);
        }
    }
    let endpoint = match (&a.bus, &a.zenoh_endpoint) {
        (BusKind::Zenoh, Some(e)) => Some(e.clone()),
        (BusKind::Zenoh, None) => Some(free_loopback_endpoint()?),
        (BusKind::Shm, _) => None,
    };
    let zenoh_config = a
        .zenoh_config
        .iter()
        .flat_map(|c| ["--zenoh-config".to_string(), c.display().to_string()]);
    if let Some(e) = &endpoint {
        sub_args.extend(["--connect".to_string(), e.clone()]);
        sub_args.extend(zenoh_config.clone());
    }
    let mut pub_args = strings(&[
        "publish",
        &data_name,
        "--feed",
        &feed,
        "--bus",
        &bus,
        "-g",
        &group,
        "--wait-subscribers",
        "1",
        "--idle-timeout",
        "20",
        "--warmup",
        &conditions.warmup.to_string(),
        "--idle-wait",
        conditions.publisher_wait(),
    ]);
    let pub_files = [
        ("--plot", a.plot.clone()),
        ("--histogram", a.histogram.clone()),
        ("--report-json", json_in("publisher.json")),
    ];
    for (flag, path) in pub_files {
        if let Some(p) = path {
            pub_args.extend([flag.to_string(), p.display().to_string()]);
        }
    }
    if let Some(e) = &endpoint {
        pub_args.extend(["--listen".to_string(), e.clone()]);
        pub_args.extend(zenoh_config);
        if a.express {
            pub_args.push("--express".to_string());
        }
        if a.data == DataSet::Opra {
            // Measured on 2 cores, `demo opra -n 100000 --bus zenoh`: one thread 30.9 k msg/s
            // and every record delivered; two threads sharing the session 23.8 k msg/s, and
            // the subscriber, its echoes read by both threads, missed 20,806 of 94,642.
            pub_args.extend(["--threads".to_string(), "1".to_string()]);
        }
    } else if a.data == DataSet::Opra && !conditions.crowded() {
        // Every process spins here: the channel threads get the cores the subscriber and
        // the multicaster leave (on 16 cores, 16 threads beside them took turns).
        let threads = (conditions.cores - (BUSY - 1)).min(super::publish::MAX_DEFAULT_THREADS);
        pub_args.extend(["--threads".to_string(), threads.to_string()]);
    }
    let mut cast_args = strings(&[
        "multicast",
        "-f",
        &file.display().to_string(),
        "-g",
        &group,
        "-s",
        &a.sleep_us.to_string(),
        "--pacing",
        conditions.pacing(),
        "-q",
    ]);
    cast_args.extend(a.faults.to_args());
    if a.data == DataSet::Opra {
        // Each channel on its own group; the publisher splits them over its threads.
        cast_args.push("--by-channel".to_string());
    }

    let mut subscriber = Running::new("subscriber", spawn(&sub_args, Stdio::piped())?, None);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let publisher = match spawn(&pub_args, Stdio::piped()) {
        Ok(c) => Running::new("publisher", c, Some(ready_tx)),
        Err(e) => {
            subscriber.stop(STOP_GRACE)?;
            return Err(e);
        }
    };
    let mut children = vec![subscriber, publisher];
    // Until every child ended; a child that fails, or a signal, ends the demo at once.
    let mut failure = None;
    loop {
        if signals::stopped() {
            break;
        }
        // The publisher prints "ready" once it has joined the group and the subscriber is
        // there: only then is the multicaster started.
        if let Ok(line) = ready_rx.try_recv() {
            if line == "ready" {
                eprintln!("multicasting {} to {group}", file.display());
                match spawn(&cast_args, Stdio::inherit()) {
                    Ok(c) => children.push(Running::new("multicaster", c, None)),
                    Err(e) => {
                        failure = Some(format!("{e:#}"));
                        break;
                    }
                }
            } else {
                failure = Some(format!("the publisher did not start (said {line})"));
                break;
            }
        }
        let mut all_ended = true;
        for c in &mut children {
            all_ended &= c.ended()?;
        }
        if let Some(c) = children.iter().find(|c| c.broke()) {
            failure = Some(format!(
                "the {} failed ({})",
                c.name,
                c.status.expect("ended")
            ));
            break;
        }
        if all_ended {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &mut children {
        c.stop(STOP_GRACE)?;
    }
    let sub_report = children[0].output();
    let report = children[1].output();
    outln!(
        "== fastfeed demo {data_name}: {} messages, publisher report",
        a.count
    );
    out!("{report}");
    out!("{sub_report}");
    out!("{}", conditions.report());
    if signals::stopped() {
        outln!("interrupted: partial reports");
        return Ok(signals::exit_code());
    }
    if let Some(why) = failure {
        eprintln!("fastfeed demo: {why}: the demo stopped");
        return Ok(ExitCode::from(1));
    }
    Ok(if children.iter().all(|c| !c.failed()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A group and port of this process's own, in the organisation-local scope 239.255/16.
fn own_group() -> SocketAddrV4 {
    let pid = std::process::id();
    let ip = std::net::Ipv4Addr::new(
        239,
        255,
        (20 + (pid >> 8) % 200) as u8,
        (pid % 250 + 1) as u8,
    );
    SocketAddrV4::new(ip, 30_000 + (pid % 30_000) as u16)
}

/// Channels of the OPRA-like data (`generate opra`'s default); one group each, from the
/// demo's group up.
const OPRA_CHANNELS: u16 = 24;

/// Round trips not timed at the start of a demo (at most a tenth of the messages).
const WARMUP: u64 = 1000;

/// What the latency figure depends on, stated with it: the cores, the processes that need
/// one, the pacing, and the load the machine had besides.
struct Conditions {
    cores: usize,
    sleep_us: u64,
    /// How the multicaster waits between packets.
    pacing: Pacing,
    load: Option<String>,
    /// Round trips not timed at the start.
    warmup: u64,
}

/// Processes busy during a demo: subscriber, publisher, multicaster.
const BUSY: usize = 3;

impl Conditions {
    fn now(sleep_us: u64, warmup: u64, pacing: Option<Pacing>) -> Conditions {
        let cores = fastfeed_net::affinity::cores();
        Conditions {
            cores,
            // Crowded (see `crowded`): a spinning multicaster would take a core the
            // measured path needs.
            pacing: pacing.unwrap_or(if cores < BUSY + 1 {
                Pacing::Sleep
            } else {
                Pacing::Spin
            }),
            sleep_us,
            warmup,
            load: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|l| l.split_whitespace().next().map(str::to_string)),
        }
    }

    /// Fewer cores than busy processes: every one cannot spin on a core of its own.
    fn crowded(&self) -> bool {
        self.cores < BUSY + 1
    }

    fn publisher_wait(&self) -> &'static str {
        if self.crowded() {
            "block"
        } else {
            "spin"
        }
    }

    fn pacing(&self) -> &'static str {
        match self.pacing {
            Pacing::Sleep => "sleep",
            Pacing::Spin => "spin",
        }
    }

    fn warning(&self) -> String {
        format!(
            "fastfeed demo: warning: {BUSY} processes (subscriber, publisher, multicaster) on \
             {} core(s): the latency measured includes waiting for a core; the multicaster \
             {} between packets and the publisher blocks between them to leave the cores \
             to the measured path",
            self.cores,
            match self.pacing {
                Pacing::Sleep => "sleeps",
                Pacing::Spin => "spins (--pacing spin)",
            }
        )
    }

    fn report(&self) -> String {
        let rate = if self.sleep_us > 0 {
            format!("{:.0} packets/s at most", 1e6 / self.sleep_us as f64)
        } else {
            "as fast as it can".to_string()
        };
        format!(
            "conditions: {} core(s), {BUSY} busy processes; the subscriber spins, the \
             publisher {} between packets, the multicaster {} {} us between packets ({rate}); \
             load average before the run {}; the first {} round trips are not timed\n",
            self.cores,
            if self.crowded() {
                "spins for echoes and blocks"
            } else {
                "spins"
            },
            match self.pacing {
                Pacing::Sleep => "sleeps",
                Pacing::Spin => "spins",
            },
            self.sleep_us,
            self.load.as_deref().unwrap_or("unknown"),
            self.warmup,
        )
    }
}

/// How long a child asked to stop may take to print its report.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Uses folder `d`, creating it if its parent exists (no whole tree from a typo).
fn make_dir(d: &std::path::Path, flag: &str) -> Result<()> {
    if d.is_dir() {
        return Ok(());
    }
    std::fs::create_dir(d).with_context(|| {
        format!(
            "{flag} {}: cannot create it (its parent folder must exist)",
            d.display()
        )
    })
}
