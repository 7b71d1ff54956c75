//! What the Zenoh-alone examples share: a peer session's configuration on one endpoint.

/// Peer mode, no scouting, `kind` (`listen/endpoints` or `connect/endpoints`) on `endpoint`.
pub fn config(kind: &str, endpoint: &str) -> zenoh::Config {
    let mut c = zenoh::Config::default();
    c.insert_json5("mode", "\"peer\"").expect("mode");
    c.insert_json5("scouting/multicast/enabled", "false")
        .expect("scouting");
    c.insert_json5(kind, &format!("[\"{endpoint}\"]"))
        .expect("endpoint");
    c
}
