//! Flow Insight views (a later issue).
