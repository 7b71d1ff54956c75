//! `fastfeed book FEEDCONFIG --security ID`: one instrument's book as the handler builds it:
//! JSON Lines per change (`--json`), the book redrawn at each change (`--follow`), or the
//! final book.

use std::collections::HashMap;
use std::io::{BufWriter, IsTerminal, Stdout, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use fastfeed_book::{Book, Level};
use fastfeed_handler::{BookView, Output};

use super::handle::load;
use super::handle_live::{run_captures, run_live};

#[derive(Args)]
pub struct BookArgs {
    /// The feed configuration (TOML).
    pub config: PathBuf,
    /// The instrument (SecurityID).
    #[arg(long, required_unless_present = "symbol", conflicts_with = "symbol")]
    pub security: Option<u64>,
    /// The instrument, on venues that name instruments by Symbol rather than SecurityID
    /// (MOEX ASTS): SYMBOL, or SYMBOL:SESSION where a TradingSessionID comes with it
    /// (`USD000UTSTOM:CETS`).
    #[arg(long, value_name = "SYMBOL[:SESSION]")]
    pub symbol: Option<String>,
    /// One JSON object per book change: security, rptSeq, msgSeqNum, state, fromSnapshot,
    /// bids and offers as [price, size, orders] from the best level down.
    #[arg(long)]
    pub json: bool,
    /// Redraw the book at each change (on a terminal).
    #[arg(long)]
    pub follow: bool,
    /// Read each line's capture file instead of its multicast group.
    #[arg(long)]
    pub captures: bool,
    /// Live: stop once no packet came for this long after the first (0: run until killed).
    #[arg(long, default_value_t = 0)]
    pub idle_exit_ms: u64,
}

struct Printer {
    security: u64,
    json: bool,
    follow: bool,
    out: BufWriter<Stdout>,
    changes: u64,
    last: Option<String>,
    failed: Option<std::io::Error>,
    /// Book changes per security, for the hint when the one asked for has none (at most
    /// `SEEN_MAX` securities: ids come from the feed).
    seen: HashMap<u64, u64>,
}

const SEEN_MAX: usize = 100_000;

impl Printer {
    /// The securities with the most book changes, most first.
    fn busiest(&self, n: usize) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self.seen.iter().map(|(&s, &c)| (s, c)).collect();
        v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

fn levels_json(levels: &[Level]) -> String {
    let items: Vec<String> = levels
        .iter()
        .map(|l| {
            let orders = l.orders.map_or("null".to_string(), |o| o.to_string());
            format!("[{},{},{orders}]", l.price, l.size)
        })
        .collect();
    format!("[{}]", items.join(","))
}

fn opt(v: Option<u64>) -> String {
    v.map_or("null".into(), |v| v.to_string())
}

/// One book change as JSON (prices exact: `133310` or `13331e1` as the feed sent them).
pub fn book_json(v: &BookView<'_>) -> String {
    format!(
        "{{\"security\":{},\"rptSeq\":{},\"msgSeqNum\":{},\"state\":\"{}\",\"fromSnapshot\":{},\"bids\":{},\"offers\":{}}}",
        v.security,
        opt(v.rpt_seq),
        opt(v.msg_seq_num),
        v.state.name(),
        v.from_snapshot,
        levels_json(v.book.bids()),
        levels_json(v.book.offers())
    )
}

fn table(v: &BookView<'_>) -> String {
    let b: &Book = v.book;
    let mut s = format!(
        "security {}  RptSeq {}  MsgSeqNum {}  {}\n{:>12} {:>8} {:>6} | {:<12} {:<8} {:<6}\n",
        v.security,
        opt(v.rpt_seq),
        opt(v.msg_seq_num),
        v.state.name(),
        "bid size",
        "orders",
        "bid",
        "offer",
        "size",
        "orders"
    );
    let rows = b.bids().len().max(b.offers().len());
    for i in 0..rows {
        let cell = |l: Option<&Level>| {
            l.map(|l| {
                (
                    l.price.to_string(),
                    l.size.to_string(),
                    l.orders.map_or(String::new(), |o| o.to_string()),
                )
            })
            .unwrap_or_default()
        };
        let (bp, bs, bo) = cell(b.bids().get(i));
        let (op, os, oo) = cell(b.offers().get(i));
        s.push_str(&format!(
            "{bs:>12} {bo:>8} {bp:>6} | {op:<12} {os:<8} {oo:<6}\n"
        ));
    }
    s
}

impl Output for Printer {
    fn book(&mut self, v: &BookView<'_>) {
        if v.security != self.security {
            if self.changes == 0
                && (self.seen.len() < SEEN_MAX || self.seen.contains_key(&v.security))
            {
                *self.seen.entry(v.security).or_default() += 1;
            }
            return;
        }
        if self.failed.is_some() {
            return;
        }
        self.changes += 1;
        let r = if self.json {
            writeln!(self.out, "{}", book_json(v))
        } else if self.follow {
            let clear = if std::io::stdout().is_terminal() {
                "\x1b[2J\x1b[H"
            } else {
                ""
            };
            write!(self.out, "{clear}{}", table(v)).and_then(|_| self.out.flush())
        } else {
            self.last = Some(table(v));
            Ok(())
        };
        if let Err(e) = r {
            self.failed = Some(e);
        }
    }
}

/// The security id the arguments name: a SecurityID, or the id a symbol is given.
fn security_of(a: &BookArgs) -> u64 {
    match (&a.symbol, a.security) {
        (Some(s), _) => {
            let (symbol, session) = match s.split_once(':') {
                Some((sym, sess)) => (sym, Some(sess)),
                None => (s.as_str(), None),
            };
            fastfeed_events::symbol_security(symbol, session)
        }
        (None, Some(id)) => id,
        (None, None) => unreachable!("clap requires one"),
    }
}

pub fn run(a: BookArgs) -> Result<ExitCode> {
    let (_, channels) = load(&a.config, false)?;
    let security = security_of(&a);
    let mut p = Printer {
        security,
        json: a.json,
        follow: a.follow,
        out: BufWriter::new(std::io::stdout()),
        changes: 0,
        last: None,
        failed: None,
        seen: HashMap::new(),
    };
    let finals = if a.captures {
        run_captures(&channels, &mut p, false)?
    } else {
        run_live(
            &channels,
            &mut p,
            a.idle_exit_ms,
            false,
            std::time::Duration::ZERO,
        )?
    };
    if let Some(t) = p.last.take() {
        write!(p.out, "{t}")?;
    }
    match p.failed.take() {
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Some(e) => return Err(e.into()),
        None => {}
    }
    p.out.flush()?;
    eprintln!("{} changes of security {security}", p.changes);
    // Live: how long the channel's datagrams took from the kernel to the books.
    for f in finals
        .iter()
        .filter(|f| f.latency.as_ref().is_some_and(|w| w.count() > 0))
    {
        let w = f.latency.as_ref().expect("filtered");
        eprintln!("{}: {}", f.name, w.summary());
    }
    if p.changes == 0 {
        // A mistyped id reads as an instrument that never traded: say what the feed had.
        let busiest = p.busiest(5);
        if busiest.is_empty() {
            eprintln!("the feed changed no book at all");
        } else {
            let list: Vec<String> = busiest.iter().map(|(s, c)| format!("{s} ({c})")).collect();
            eprintln!(
                "no book change of that security in the feed; it changed {} books, the busiest: {}",
                p.seen.len(),
                list.join(", ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
