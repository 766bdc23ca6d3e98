//! Node address ranges: `10.0.1.0/24` (usable hosts) or `10.0.1.10-10.0.1.250`.

use std::net::Ipv4Addr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpRange {
    first: u32,
    /// Number of addresses in the range.
    len: u32,
}

/// Why an `ip_range` was refused; the config loader adds the file, line and field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IpRangeError {
    #[error("invalid IPv4 address {addr:?} in {range:?}")]
    Address { addr: String, range: String },
    #[error("invalid prefix length {bits:?} in {range:?}")]
    PrefixLength { bits: String, range: String },
    #[error("prefix length /{bits} in {range:?} must be between /8 and /30")]
    PrefixOutOfRange { bits: u32, range: String },
    #[error("range {0:?} ends before it starts")]
    Backwards(String),
    #[error("invalid ip_range {0:?}: expected a CIDR block like 10.0.1.0/24 or a span like 10.0.1.10-10.0.1.250")]
    Shape(String),
}

impl IpRange {
    pub fn parse(s: &str) -> Result<IpRange, IpRangeError> {
        let s = s.trim();
        let address = |addr: &str| IpRangeError::Address { addr: addr.to_string(), range: s.to_string() };
        if let Some((addr, bits)) = s.split_once('/') {
            let base: Ipv4Addr = addr.trim().parse().map_err(|_| address(addr))?;
            let bits: u32 = bits
                .trim()
                .parse()
                .map_err(|_| IpRangeError::PrefixLength { bits: bits.to_string(), range: s.to_string() })?;
            if !(8..=30).contains(&bits) {
                return Err(IpRangeError::PrefixOutOfRange { bits, range: s.to_string() });
            }
            let mask = u32::MAX << (32 - bits);
            let net = u32::from(base) & mask;
            // Skip the network and broadcast addresses, as a real subnet would.
            Ok(IpRange { first: net + 1, len: (1u32 << (32 - bits)) - 2 })
        } else if let Some((a, b)) = s.split_once('-') {
            let a: Ipv4Addr = a.trim().parse().map_err(|_| address(a))?;
            let b: Ipv4Addr = b.trim().parse().map_err(|_| address(b))?;
            let (a, b) = (u32::from(a), u32::from(b));
            if b < a {
                return Err(IpRangeError::Backwards(s.to_string()));
            }
            Ok(IpRange { first: a, len: b - a + 1 })
        } else {
            Err(IpRangeError::Shape(s.to_string()))
        }
    }

    pub fn len(&self) -> u32 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The `n`th address of the range.
    pub fn nth(&self, n: u32) -> Option<Ipv4Addr> {
        (n < self.len).then(|| Ipv4Addr::from(self.first + n))
    }
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let v = u32::from(ip);
        v >= self.first && v - self.first < self.len
    }
    pub fn overlaps(&self, other: &IpRange) -> bool {
        let (a0, a1) = (self.first as u64, self.first as u64 + self.len as u64);
        let (b0, b1) = (other.first as u64, other.first as u64 + other.len as u64);
        a0 < b1 && b0 < a1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_skips_network_and_broadcast() {
        let r = IpRange::parse("10.0.1.0/24").unwrap();
        assert_eq!(r.len(), 254);
        assert_eq!(r.nth(0).unwrap().to_string(), "10.0.1.1");
        assert_eq!(r.nth(253).unwrap().to_string(), "10.0.1.254");
        assert!(r.nth(254).is_none());
    }

    #[test]
    fn spans_are_inclusive_and_errors_say_why() {
        let r = IpRange::parse("10.0.1.10-10.0.1.12").unwrap();
        assert_eq!(r.len(), 3);
        assert!(r.contains("10.0.1.12".parse().unwrap()));
        assert!(IpRange::parse("10.0.1.10").unwrap_err().to_string().contains("CIDR"));
        assert!(IpRange::parse("10.0.1.9-10.0.1.1").unwrap_err().to_string().contains("ends before"));
    }
}
