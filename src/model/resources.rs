//! Logical resources in Ray's fixed-point units.
//!
//! Ray keeps resource quantities as integers scaled by 10,000 so that fractional
//! requests (0.5 CPU) add and subtract exactly. We do the same: no float drift can ever
//! make `available` exceed `total` or go below zero.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

/// Ray's `kResourceUnitScaling`.
pub const RESOURCE_UNIT_SCALING: i64 = 10_000;

/// A resource quantity in units of 1/10,000.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct FixedPoint(pub i64);

impl FixedPoint {
    pub const ZERO: FixedPoint = FixedPoint(0);

    pub fn from_f64(v: f64) -> FixedPoint {
        FixedPoint((v * RESOURCE_UNIT_SCALING as f64).round() as i64)
    }
    pub fn from_units(v: i64) -> FixedPoint {
        FixedPoint(v * RESOURCE_UNIT_SCALING)
    }
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / RESOURCE_UNIT_SCALING as f64
    }
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl Add for FixedPoint {
    type Output = FixedPoint;
    fn add(self, o: FixedPoint) -> FixedPoint {
        FixedPoint(self.0 + o.0)
    }
}
impl Sub for FixedPoint {
    type Output = FixedPoint;
    fn sub(self, o: FixedPoint) -> FixedPoint {
        FixedPoint(self.0 - o.0)
    }
}
impl AddAssign for FixedPoint {
    fn add_assign(&mut self, o: FixedPoint) {
        self.0 += o.0
    }
}
impl SubAssign for FixedPoint {
    fn sub_assign(&mut self, o: FixedPoint) {
        self.0 -= o.0
    }
}
impl fmt::Display for FixedPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_f64())
    }
}

/// Index of a resource kind. The four predefined kinds come first; custom resources
/// named in the config follow in order of first appearance.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ResourceId(pub u16);

impl ResourceId {
    pub const CPU: ResourceId = ResourceId(0);
    pub const GPU: ResourceId = ResourceId(1);
    pub const MEMORY: ResourceId = ResourceId(2);
    pub const OBJECT_STORE_MEMORY: ResourceId = ResourceId(3);
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Resource names by id; built once from the config and shared read-only.
#[derive(Clone, Debug)]
pub struct ResourceNames {
    names: Vec<String>,
}

impl Default for ResourceNames {
    fn default() -> Self {
        ResourceNames { names: ["CPU", "GPU", "memory", "object_store_memory"].iter().map(|s| s.to_string()).collect() }
    }
}

impl ResourceNames {
    pub fn id_of(&self, name: &str) -> Option<ResourceId> {
        self.names.iter().position(|n| n == name).map(|i| ResourceId(i as u16))
    }
    pub fn intern(&mut self, name: &str) -> ResourceId {
        match self.id_of(name) {
            Some(id) => id,
            None => {
                self.names.push(name.to_string());
                ResourceId((self.names.len() - 1) as u16)
            }
        }
    }
    pub fn name(&self, id: ResourceId) -> &str {
        &self.names[id.index()]
    }
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = (ResourceId, &str)> {
        self.names.iter().enumerate().map(|(i, n)| (ResourceId(i as u16), n.as_str()))
    }
}

/// A dense vector of quantities, one per resource kind (nodes' total and available).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ResVec(pub Vec<FixedPoint>);

impl ResVec {
    pub fn zeros(n: usize) -> ResVec {
        ResVec(vec![FixedPoint::ZERO; n])
    }
    #[inline]
    pub fn get(&self, id: ResourceId) -> FixedPoint {
        self.0.get(id.index()).copied().unwrap_or(FixedPoint::ZERO)
    }
    #[inline]
    pub fn set(&mut self, id: ResourceId, v: FixedPoint) {
        if self.0.len() <= id.index() {
            self.0.resize(id.index() + 1, FixedPoint::ZERO);
        }
        self.0[id.index()] = v;
    }
    /// True when every quantity in `req` is available here.
    #[inline]
    pub fn fits(&self, req: &ResourceRequest) -> bool {
        req.0.iter().all(|&(id, q)| self.get(id) >= q)
    }
    #[inline]
    pub fn subtract(&mut self, req: &ResourceRequest) {
        for &(id, q) in req.0.iter() {
            self.0[id.index()] -= q;
        }
    }
    #[inline]
    pub fn add(&mut self, req: &ResourceRequest) {
        for &(id, q) in req.0.iter() {
            self.0[id.index()] += q;
        }
    }
}

/// A sparse request: only the kinds asked for, each with a positive quantity.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct ResourceRequest(pub Vec<(ResourceId, FixedPoint)>);

impl ResourceRequest {
    pub fn new(mut items: Vec<(ResourceId, FixedPoint)>) -> ResourceRequest {
        items.retain(|(_, q)| q.0 > 0);
        items.sort_by_key(|(id, _)| *id);
        ResourceRequest(items)
    }
    pub fn cpu(units: f64) -> ResourceRequest {
        ResourceRequest::new(vec![(ResourceId::CPU, FixedPoint::from_f64(units))])
    }
    pub fn get(&self, id: ResourceId) -> FixedPoint {
        self.0.iter().find(|(i, _)| *i == id).map(|(_, q)| *q).unwrap_or(FixedPoint::ZERO)
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn needs_gpu(&self) -> bool {
        self.get(ResourceId::GPU).0 > 0
    }
    /// Sum of two requests (bundles packed on one node).
    pub fn plus(&self, other: &ResourceRequest) -> ResourceRequest {
        let mut items = self.0.clone();
        for &(id, q) in &other.0 {
            match items.iter_mut().find(|(i, _)| *i == id) {
                Some((_, v)) => *v += q,
                None => items.push((id, q)),
            }
        }
        ResourceRequest::new(items)
    }
}

/// Bytes, for memory and object sizes. Serialized as the bare number; config files
/// write it with a unit (`512MiB`), which `config::units` parses.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug, serde::Serialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const KIB: u64 = 1024;
    pub const MIB: u64 = 1024 * 1024;
    pub const GIB: u64 = 1024 * 1024 * 1024;

    /// As a metric's sample value.
    #[inline]
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }

    #[inline]
    pub fn saturating_sub(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(other.0))
    }
}

impl Add for Bytes {
    type Output = Bytes;
    #[inline]
    fn add(self, other: Bytes) -> Bytes {
        Bytes(self.0 + other.0)
    }
}

impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        Bytes(iter.map(|b| b.0).sum())
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if self.0 >= Bytes::GIB {
            write!(f, "{:.1}GiB", b / Bytes::GIB as f64)
        } else if self.0 >= Bytes::MIB {
            write!(f, "{:.1}MiB", b / Bytes::MIB as f64)
        } else if self.0 >= Bytes::KIB {
            write!(f, "{:.1}KiB", b / Bytes::KIB as f64)
        } else {
            write!(f, "{}B", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractional_requests_add_exactly() {
        let mut avail = ResVec::zeros(4);
        avail.set(ResourceId::CPU, FixedPoint::from_units(1));
        let third = ResourceRequest::cpu(0.3333);
        for _ in 0..3 {
            assert!(avail.fits(&third));
            avail.subtract(&third);
        }
        assert!(!avail.fits(&third));
        for _ in 0..3 {
            avail.add(&third);
        }
        assert_eq!(avail.get(ResourceId::CPU), FixedPoint::from_units(1));
    }

    #[test]
    fn request_drops_zero_quantities_and_sorts() {
        let r = ResourceRequest::new(vec![
            (ResourceId::GPU, FixedPoint::from_units(1)),
            (ResourceId::CPU, FixedPoint::ZERO),
        ]);
        assert_eq!(r.0.len(), 1);
        assert!(r.needs_gpu());
    }
}
