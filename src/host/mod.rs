//! host (in progress)
