//! workload (in progress)
