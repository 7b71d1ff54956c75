//! From a feed configuration to channels: templates read, profile resolved with its
//! overrides, settings derived.

use std::ops::ControlFlow;
use std::sync::Arc;

use fastfeed_codec::Templates;
use fastfeed_events::Profile;
use fastfeed_feed::{ChannelConfig, FeedConfig, LineConfig};

use crate::channel::Channel;
use crate::output::Output;
use crate::settings::{ChannelSettings, LineId};
use crate::source::{load_line, CapturedLine, SourceError};
use crate::stream::{LineStream, MergedLines};

/// A configuration that cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A template file cannot be read or does not compile.
    #[error("templates {path}: {message}")]
    Templates {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The profile is unknown or an override is wrong.
    #[error("profile {name}: {message}")]
    Profile {
        /// The profile's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A capture cannot be loaded.
    #[error(transparent)]
    Source(#[from] SourceError),
}

/// One channel, ready to run.
#[derive(Debug, Clone)]
pub struct ChannelSetup {
    /// Its configuration.
    pub config: ChannelConfig,
    /// Its compiled templates.
    pub templates: Arc<Templates>,
    /// The feed's profile.
    pub profile: Profile,
    /// Its settings.
    pub settings: ChannelSettings,
}

impl ChannelSetup {
    /// A fresh channel state machine.
    pub fn channel(&self) -> Channel {
        Channel::new(
            self.templates.clone(),
            self.profile.clone(),
            self.settings.clone(),
        )
    }

    /// The configured lines with their ids: A, then B and the snapshot line if present.
    pub fn lines(&self) -> Vec<(LineId, &LineConfig)> {
        let c = &self.config;
        let mut v = vec![(LineId::A, &c.a)];
        v.extend(c.b.as_ref().map(|b| (LineId::B, b)));
        v.extend(c.snapshot.as_ref().map(|s| (LineId::Snapshot, s)));
        v
    }

    /// Every line's capture, opened to be read as it is handled (see [`LineStream`]).
    pub fn streams(&self) -> Result<Vec<LineStream>, SourceError> {
        self.lines()
            .into_iter()
            .map(|(id, l)| LineStream::open(id, l, &self.templates, self.settings.header))
            .collect()
    }

    /// The channel run over its lines' captures, read as they are handled and merged by
    /// time, its outputs to `out`; `before` is told each packet's time first (an output
    /// that records when), and may stop the run there (a reader gone, Ctrl-C): the channel
    /// then ends at that packet. Hands back the finished channel, and the lines for what
    /// they say of their files (damage, capture counts).
    pub fn run_captures<O: Output>(
        &self,
        out: &mut O,
        mut before: impl FnMut(&mut O, u64) -> ControlFlow<()>,
    ) -> Result<(Channel, MergedLines), SourceError> {
        let mut lines = MergedLines::new(self.streams()?)?;
        let mut ch = self.channel();
        let mut now = 0;
        while let Some(p) = lines.next()? {
            now = p.ts_ns;
            if before(out, now).is_break() {
                break;
            }
            ch.on_packet(p.line, p.bytes, now, out);
        }
        // A second past the last packet: whatever gap is still held is given up.
        ch.finish(now.saturating_add(1_000_000_000), out);
        Ok((ch, lines))
    }

    /// Every line's capture, loaded whole (benchmarks and replays).
    pub fn captures(&self) -> Result<Vec<CapturedLine>, SourceError> {
        self.lines()
            .into_iter()
            .map(|(id, l)| load_line(id, l, &self.templates, self.settings.header))
            .collect()
    }
}

/// Sets up every channel of a feed.
pub fn setup(feed: &FeedConfig) -> Result<Vec<ChannelSetup>, SetupError> {
    let profile = Profile::by_name(&feed.profile)
        .ok_or_else(|| SetupError::Profile {
            name: feed.profile.clone(),
            message: format!("unknown (known: {})", fastfeed_events::PROFILES.join(", ")),
        })?
        .with_overrides(&feed.overrides)
        .map_err(|message| SetupError::Profile {
            name: feed.profile.clone(),
            message,
        })?;
    feed.channels
        .iter()
        .map(|c| {
            let path = feed.templates_of(c);
            let shown = path.display().to_string();
            let bytes = std::fs::read(&path).map_err(|e| SetupError::Templates {
                path: shown.clone(),
                message: e.to_string(),
            })?;
            let xml = fastfeed_codec::template::template_text(&bytes).map_err(|e| {
                SetupError::Templates {
                    path: shown.clone(),
                    message: e.to_string(),
                }
            })?;
            let templates =
                fastfeed_codec::parse_templates(&xml).map_err(|e| SetupError::Templates {
                    path: shown,
                    message: e.to_string(),
                })?;
            Ok(ChannelSetup {
                config: c.clone(),
                templates,
                profile: profile.clone(),
                settings: ChannelSettings::from_config(c),
            })
        })
        .collect()
}
