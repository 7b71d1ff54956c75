//! Topic names `fastfeed/<feed>/<type>[/<security>]` and security filters.

use crate::BusError;
use std::fmt;
use std::str::FromStr;

const PREFIX: &str = "fastfeed";
/// Record type names reserved for the auxiliary channels of a feed.
pub const RESERVED_TYPES: [&str; 2] = ["echo", "control"];

/// Which securities a subscriber wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Securities {
    /// Every security.
    All,
    /// These securities only.
    Only(Vec<u32>),
}

impl Securities {
    /// Whether `security_id` passes the filter (linear search).
    pub fn matches(&self, security_id: u32) -> bool {
        match self {
            Securities::All => true,
            Securities::Only(ids) => ids.contains(&security_id),
        }
    }

    /// Sorted and deduplicated, so that `matches` can be a binary search.
    pub(crate) fn normalized(self) -> Self {
        match self {
            Securities::All => Securities::All,
            Securities::Only(mut ids) => {
                ids.sort_unstable();
                ids.dedup();
                Securities::Only(ids)
            }
        }
    }

    /// `matches` on a normalized filter.
    #[inline]
    pub(crate) fn matches_sorted(&self, security_id: u32) -> bool {
        match self {
            Securities::All => true,
            Securities::Only(ids) => ids.binary_search(&security_id).is_ok(),
        }
    }
}

/// A parsed topic name. `security: None` means the whole (feed, type) stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Topic {
    /// The feed.
    pub feed: String,
    /// The record type's [`Record::TYPE_NAME`](crate::Record::TYPE_NAME).
    pub type_name: String,
    /// One security, or the whole (feed, type) stream.
    pub security: Option<u32>,
}

fn check_part(name: &str, part: &str) -> Result<(), BusError> {
    if part.is_empty() {
        return Err(BusError::InvalidTopic(name.into(), "empty component"));
    }
    if !part
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
    {
        return Err(BusError::InvalidTopic(
            name.into(),
            "components may only contain [A-Za-z0-9_.-]",
        ));
    }
    Ok(())
}

impl Topic {
    /// Topic for all securities of a record type.
    pub fn new(feed: &str, type_name: &str) -> Result<Self, BusError> {
        let full = format!("{PREFIX}/{feed}/{type_name}");
        check_part(&full, feed)?;
        check_part(&full, type_name)?;
        Ok(Topic {
            feed: feed.into(),
            type_name: type_name.into(),
            security: None,
        })
    }

    /// Topic for all securities of record type `R`; refuses the reserved type names.
    pub fn of_record<R: crate::Record>(feed: &str) -> Result<Self, BusError> {
        if RESERVED_TYPES.contains(&R::TYPE_NAME) {
            return Err(BusError::InvalidTopic(
                R::TYPE_NAME.into(),
                "reserved type name",
            ));
        }
        Topic::new(feed, R::TYPE_NAME)
    }

    /// Topic of the auxiliary channel of `M` (`fastfeed/<feed>/echo`, `.../control`).
    pub fn of_message<M: crate::Message>(feed: &str) -> Result<Self, BusError> {
        Topic::new(feed, M::TYPE_NAME)
    }

    /// The same topic restricted to one security.
    pub fn with_security(mut self, security: u32) -> Self {
        self.security = Some(security);
        self
    }

    /// The whole (feed, type) stream this topic is part of: the name without the security.
    pub fn stream_name(&self) -> String {
        format!("{PREFIX}/{}/{}", self.feed, self.type_name)
    }

    /// The filter a subscriber of this topic needs.
    pub fn securities(&self) -> Securities {
        match self.security {
            None => Securities::All,
            Some(s) => Securities::Only(vec![s]),
        }
    }
}

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}/{}/{}", self.feed, self.type_name)?;
        if let Some(s) = self.security {
            write!(f, "/{s}")?;
        }
        Ok(())
    }
}

impl FromStr for Topic {
    type Err = BusError;

    fn from_str(s: &str) -> Result<Self, BusError> {
        let parts: Vec<&str> = s.split('/').collect();
        if !(3..=4).contains(&parts.len()) || parts[0] != PREFIX {
            return Err(BusError::InvalidTopic(
                s.into(),
                "expected fastfeed/<feed>/<type>[/<security>]",
            ));
        }
        let topic = Topic::new(parts[1], parts[2])?;
        match parts.get(3) {
            None => Ok(topic),
            Some(sec) => sec
                .parse()
                .map(|id| topic.with_security(id))
                .map_err(|_| BusError::InvalidTopic(s.into(), "security must be a u32")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_and_parse_roundtrip() {
        let t = Topic::new("cme", "quote").unwrap().with_security(42);
        assert_eq!(t.to_string(), "fastfeed/cme/quote/42");
        assert_eq!(t.stream_name(), "fastfeed/cme/quote");
        assert_eq!("fastfeed/cme/quote/42".parse::<Topic>().unwrap(), t);
        let all: Topic = "fastfeed/cme/quote".parse().unwrap();
        assert_eq!(all.security, None);
        assert_eq!(all.securities(), Securities::All);
        assert_eq!(t.securities(), Securities::Only(vec![42]));
    }

    #[test]
    fn rejects_bad_names() {
        for bad in [
            "fastfeed/cme",
            "other/cme/quote",
            "fastfeed//quote",
            "fastfeed/cme/quote/x",
            "fastfeed/cme/quote/1/2",
            "fastfeed/c me/quote",
        ] {
            assert!(bad.parse::<Topic>().is_err(), "{bad}");
        }
    }

    #[test]
    fn filters() {
        let f = Securities::Only(vec![5, 1, 5, 3]).normalized();
        assert_eq!(f, Securities::Only(vec![1, 3, 5]));
        assert!(f.matches_sorted(3) && !f.matches_sorted(4));
        assert!(Securities::All.matches_sorted(4));
    }
}
