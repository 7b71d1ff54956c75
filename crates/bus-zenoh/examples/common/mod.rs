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

/// Two peer sessions over TCP loopback on `endpoint`: the first listens, the second connects.
#[allow(dead_code)] // zping configures its own (`pair_with`)
pub fn pair(endpoint: &str) -> (zenoh::Session, zenoh::Session) {
    pair_with(endpoint, config)
}

/// [`pair`], each session configured by `make(kind, endpoint)`.
pub fn pair_with(
    endpoint: &str,
    make: fn(&str, &str) -> zenoh::Config,
) -> (zenoh::Session, zenoh::Session) {
    use zenoh::Wait;
    let listening = zenoh::open(make("listen/endpoints", endpoint))
        .wait()
        .expect("listening session");
    let connecting = zenoh::open(make("connect/endpoints", endpoint))
        .wait()
        .expect("connecting session");
    (listening, connecting)
}
