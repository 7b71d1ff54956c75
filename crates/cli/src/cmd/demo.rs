//! `fastfeed demo`: the whole system on this host, as separate processes: generate data,
//! start a subscriber and the decoding publisher, multicast the packets over loopback, and
//! print both reports.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::bus::BusKind;
use super::generate::{DataSet, GenerateArgs};
use super::multicast::FaultArgs;

#[derive(Args, Clone)]
pub struct DemoArgs {
    #[arg(value_enum, default_value = "simple")]
    pub data: DataSet,
    /// Messages to generate.
    #[arg(short = 'n', long, default_value_t = 30_000)]
    pub count: usize,
    #[arg(short = 'g', long, default_value = super::multicast::DEFAULT_GROUP)]
    pub group: SocketAddrV4,
    /// The bus that carries the records from the publisher to the subscriber.
    #[arg(long, value_enum, default_value_t = BusKind::Shm)]
    pub bus: BusKind,
    /// With --bus zenoh: the publisher listens here and the subscriber connects to it
    /// (default: a free loopback port).
    #[arg(long, value_name = "ENDPOINT")]
    pub zenoh_endpoint: Option<String>,
    /// Pause between packets, in microseconds.
    #[arg(short = 's', long, default_value_t = 50)]
    pub sleep_us: u64,
    /// Where to write the generated data (a temporary folder by default).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write each record the subscriber receives to this file.
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
    let exe = std::env::current_exe().context("locating the fastfeed executable")?;
    Command::new(exe)
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::inherit())
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

pub fn run(a: DemoArgs) -> Result<ExitCode> {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("fastfeed demo: {}", fastfeed_net::LOOPBACK_HINT);
        eprintln!("(or run the publisher from the file: fastfeed publish -f FILE)");
        return Ok(ExitCode::from(3));
    }
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("fastfeed-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    let data_name = format!("{:?}", a.data).to_lowercase();
    let file = dir.join(format!("{data_name}{}.dat", a.count));
    let gen = GenerateArgs {
        data: a.data,
        output: file.clone(),
        count: a.count,
        max_packet: 1024,
        seq: 3.0,
        nosplit: false,
        securities: None,
        seed: 1,
    };
    super::generate::run(gen)?;

    let feed = format!("demo{}", std::process::id());
    let group = a.group.to_string();
    let bus = a.bus.name();
    if let Some(d) = &a.report_json {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
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
    if let Some(e) = &endpoint {
        sub_args.extend(["--connect".to_string(), e.clone()]);
    }
    let mut subscriber = spawn(&sub_args, Stdio::piped())?;
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
    }
    let mut publisher = spawn(&pub_args, Stdio::piped())?;
    // The publisher prints "ready" once it has joined the group and the subscriber is there.
    let mut pub_out = BufReader::new(publisher.stdout.take().expect("piped"));
    let mut line = String::new();
    pub_out.read_line(&mut line)?;
    if line.trim() != "ready" {
        let _ = subscriber.kill();
        bail!("the publisher did not start (said {line:?})");
    }
    eprintln!("multicasting {} to {group}", file.display());
    let mut cast_args = strings(&[
        "multicast",
        "-f",
        &file.display().to_string(),
        "-g",
        &group,
        "-s",
        &a.sleep_us.to_string(),
        "-q",
    ]);
    cast_args.extend(a.faults.to_args());
    let mut caster = spawn(&cast_args, Stdio::inherit())?;
    let cast_ok = caster.wait()?.success();
    let mut report = String::new();
    pub_out.read_to_string(&mut report)?;
    let pub_ok = publisher.wait()?.success();
    let mut sub_report = String::new();
    subscriber
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut sub_report)?;
    let sub_ok = subscriber.wait()?.success();
    println!(
        "== fastfeed demo {data_name}: {} messages, publisher report",
        a.count
    );
    print!("{report}");
    print!("{sub_report}");
    if a.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(if cast_ok && pub_ok && sub_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
