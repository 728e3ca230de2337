//! Value parsers more than one command shares.

/// An InfiniBand path MTU in bytes.
pub fn parse_mtu(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(m) if [256, 512, 1024, 2048, 4096].contains(&m) => Ok(m),
        _ => Err(format!(
            "'{s}' is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)"
        )),
    }
}
