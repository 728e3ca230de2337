//! Which names a filter (or `-T fields -e`) may use, and the keys and kind each stands for.
use parsers::fields::{FIELDS, Kind, kind_of};

/// `frame.*` as [`super::Subject::visit`] emits them.
const FRAME_FIELDS: &[(&str, Kind)] = &[
    ("frame.cap_len", Kind::Uint),
    ("frame.interface_id", Kind::Uint),
    ("frame.len", Kind::Uint),
    ("frame.number", Kind::Uint),
];

/// The analysis' fields (present only where the engine's view says so).
pub const ANALYSIS_FIELDS: &[(&str, Kind)] = &[
    ("rocescope.class", Kind::Text),
    ("rocescope.event", Kind::Text),
    ("rocescope.flow", Kind::Uint),
    ("rocescope.retransmission", Kind::Bool),
    ("rocescope.severity", Kind::Text),
];

/// Names that stand for several fields, as in Wireshark: `ip.addr` is the source or the destination; a
/// second 802.1Q tag is `vlan.*` to Wireshark, `rocescope.vlan_inner.*` in rocescope's field list.
const ALIASES: &[(&str, &[&str])] = &[
    ("eth.addr", &["eth.src", "eth.dst"]),
    ("ip.addr", &["ip.src", "ip.dst"]),
    ("ipv6.addr", &["ipv6.src", "ipv6.dst"]),
    ("udp.port", &["udp.srcport", "udp.dstport"]),
    ("vlan.dei", &["vlan.dei", "rocescope.vlan_inner.dei"]),
    ("vlan.etype", &["vlan.etype", "rocescope.vlan_inner.etype"]),
    ("vlan.id", &["vlan.id", "rocescope.vlan_inner.id"]),
    (
        "vlan.priority",
        &["vlan.priority", "rocescope.vlan_inner.priority"],
    ),
];

/// Headers whose name prefixes fields of another (Wireshark names the AtomicETH's VA and R_Key like the
/// RETH's): each is present when this field of its own is.
const HEADERS: &[(&str, &str)] = &[("infiniband.reth", "infiniband.reth.dmalen")];

/// What a name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// Fields of one kind: the keys their values come under.
    Fields(Vec<&'static str>, Kind),
    /// A protocol or header (`udp`, `infiniband.aeth`): present when a field under it is.
    Protocol,
    /// A header present when this field is (see `HEADERS`).
    Header(&'static str),
}

fn lookup(table: &'static [(&'static str, Kind)], name: &str) -> Option<(&'static str, Kind)> {
    table.iter().find(|(k, _)| *k == name).copied()
}

/// The keys and kind `name` stands for, or `None` when rocescope has no such field.
pub fn resolve(name: &str) -> Option<Resolved> {
    if let Some((_, keys)) = ALIASES.iter().find(|(a, _)| *a == name) {
        let kind = keys.iter().find_map(|k| kind_of(k))?;
        return Some(Resolved::Fields(keys.to_vec(), kind));
    }
    let field = FIELDS
        .binary_search_by(|(k, _)| (*k).cmp(name))
        .ok()
        .and_then(|i| FIELDS.get(i).copied())
        .or_else(|| lookup(FRAME_FIELDS, name))
        .or_else(|| lookup(ANALYSIS_FIELDS, name));
    if let Some((key, kind)) = field {
        return Some(Resolved::Fields(vec![key], kind));
    }
    if let Some((_, key)) = HEADERS.iter().find(|(h, _)| *h == name) {
        return Some(Resolved::Header(key));
    }
    let all = FIELDS.iter().chain(FRAME_FIELDS).chain(ANALYSIS_FIELDS);
    let under = |k: &str| {
        k.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('.'))
    };
    all.clone()
        .any(|(k, _)| under(k))
        .then_some(Resolved::Protocol)
}

/// True when `name` is an analysis field, and when it is one of the events'.
pub fn of_analysis(name: &str) -> (bool, bool) {
    let analysis = lookup(ANALYSIS_FIELDS, name).is_some();
    let events = matches!(name, "rocescope.event" | "rocescope.severity");
    (analysis, events)
}
