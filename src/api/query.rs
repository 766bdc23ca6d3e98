//! Query parameters of the State API, as Ray's `ray list` / `ray summary` send them.
//!
//! `limit` (default 100), `detail`, `exclude_driver` (tasks; default true, as Ray),
//! `timeout` and `server_timeout_multiplier` (accepted, not needed: answers come from
//! memory), and filters as three parallel repeated parameters: `filter_keys`,
//! `filter_predicates` (`=` or `!=`) and `filter_values`. rayscope adds `offset` and
//! `page_token` for paging and `<column>=<value>` shorthands (`?state=RUNNING`). String comparisons are
//! case-insensitive, as Ray's. Anything else is a 400 naming the parameter, because a
//! silently ignored typo (`?stat=RUNNING`) would look like an answer.

use super::error::ApiError;
use super::rows::{Cell, Kind, Resource};

pub(crate) const DEFAULT_LIMIT: usize = 100;

/// Rows in one answer at most (Ray's `RAY_MAX_LIMIT_FROM_API_SERVER`); a larger `limit`
/// is served a page at a time with `offset`.
pub(crate) const MAX_PAGE: usize = 10_000;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Want {
    Str(String),
    Int(i64),
    Bool(bool),
}

#[derive(Clone, Debug)]
pub(crate) struct Filter {
    /// Index into the resource's columns.
    pub column: usize,
    pub negate: bool,
    pub want: Want,
}

impl Filter {
    pub fn matches(&self, cell: &Cell<'_>) -> bool {
        let eq = match (&self.want, cell) {
            (Want::Str(w), Cell::Str(v)) => v.eq_ignore_ascii_case(w),
            (Want::Int(w), Cell::Int(v)) => v == w,
            (Want::Bool(w), Cell::Bool(v)) => v == w,
            _ => false,
        };
        eq != self.negate
    }
}

#[derive(Clone, Debug)]
pub(crate) struct ListQuery {
    pub limit: usize,
    pub offset: usize,
    pub detail: bool,
    pub exclude_driver: bool,
    pub filters: Vec<Filter>,
    /// Other accepted parameters, by name (e.g. `summary_by`).
    pub extra: Vec<(String, String)>,
}

/// Parse `raw` for `resource`; `extra_names` are further parameters the caller accepts.
pub(crate) fn parse(raw: Option<&str>, resource: Resource, extra_names: &[&str]) -> Result<ListQuery, ApiError> {
    let mut q = ListQuery {
        limit: DEFAULT_LIMIT,
        offset: 0,
        detail: false,
        exclude_driver: true,
        filters: Vec::new(),
        extra: Vec::new(),
    };
    let (mut keys, mut predicates, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for (name, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        let (name, value) = (name.as_ref(), value.as_ref());
        match name {
            "limit" => q.limit = positive("limit", value)?,
            "offset" => q.offset = number("offset", value)?,
            "detail" => q.detail = boolean("detail", value)?,
            "exclude_driver" => q.exclude_driver = boolean("exclude_driver", value)?,
            "timeout" | "server_timeout_multiplier" => {
                value.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0).ok_or_else(|| {
                    ApiError::parameter(name, format!("{name} must be a positive number, got {value:?}"))
                })?;
            }
            "filter_keys" => keys.push(value.to_string()),
            "filter_predicates" => predicates.push(value.to_string()),
            "filter_values" => values.push(value.to_string()),
            other if extra_names.contains(&other) => q.extra.push((other.to_string(), value.to_string())),
            other => match resource.column(other) {
                Some(c) if resource.columns()[c].filterable => q.filters.push(filter(resource, c, "=", value, other)?),
                _ => return Err(unknown_parameter(other, resource, extra_names)),
            },
        }
    }
    if keys.len() != values.len() {
        let which = if keys.len() > values.len() { "filter_values" } else { "filter_keys" };
        return Err(ApiError::parameter(
            which,
            format!("filter_keys ({}) and filter_values ({}) must come in pairs", keys.len(), values.len()),
        ));
    }
    if !predicates.is_empty() && predicates.len() != keys.len() {
        return Err(ApiError::parameter(
            "filter_predicates",
            format!("filter_predicates ({}) must pair with filter_keys ({})", predicates.len(), keys.len()),
        ));
    }
    for (i, (key, value)) in keys.iter().zip(&values).enumerate() {
        let key_l = key.to_ascii_lowercase();
        let c = resource.column(&key_l).filter(|c| resource.columns()[*c].filterable).ok_or_else(|| {
            ApiError::parameter(
                "filter_keys",
                format!(
                    "{key:?} is not a filterable column of {}; filterable columns: {}",
                    resource.name(),
                    filterable(resource).join(", ")
                ),
            )
            .with("valid", filterable(resource))
        })?;
        let predicate = predicates.get(i).map(String::as_str).unwrap_or("=");
        q.filters.push(filter(resource, c, predicate, value, "filter_values")?);
    }
    Ok(q)
}

fn filter(
    resource: Resource,
    column: usize,
    predicate: &str,
    value: &str,
    parameter: &str,
) -> Result<Filter, ApiError> {
    let negate = match predicate {
        "=" => false,
        "!=" => true,
        other => {
            return Err(ApiError::parameter(
                "filter_predicates",
                format!("unsupported filter predicate {other:?}; available predicates: =, !="),
            ))
        }
    };
    let col = &resource.columns()[column];
    let want = match col.kind {
        Kind::Str | Kind::Json => Want::Str(value.to_string()),
        Kind::Int => Want::Int(value.trim().parse().map_err(|_| {
            ApiError::parameter(parameter, format!("{} is a whole number; cannot compare it with {value:?}", col.name))
        })?),
        Kind::Bool => Want::Bool(parse_bool(value).ok_or_else(|| {
            ApiError::parameter(parameter, format!("{} is true or false; cannot compare it with {value:?}", col.name))
        })?),
    };
    Ok(Filter { column, negate, want })
}

fn filterable(resource: Resource) -> Vec<&'static str> {
    resource.columns().iter().filter(|c| c.filterable).map(|c| c.name).collect()
}

fn unknown_parameter(name: &str, resource: Resource, extra: &[&str]) -> ApiError {
    let mut valid = vec!["limit", "offset", "detail", "filter_keys", "filter_predicates", "filter_values", "timeout"];
    if resource == Resource::Tasks {
        valid.push("exclude_driver");
    }
    valid.extend_from_slice(extra);
    ApiError::parameter(
        name,
        format!(
            "unknown parameter {name:?}; valid parameters: {}, or a filterable column as a shorthand filter ({})",
            valid.join(", "),
            filterable(resource).join(", ")
        ),
    )
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

pub(crate) fn boolean(name: &str, v: &str) -> Result<bool, ApiError> {
    parse_bool(v).ok_or_else(|| ApiError::parameter(name, format!("{name} must be true or false, got {v:?}")))
}

/// A whole number ≥ 0.
pub(crate) fn number(name: &str, v: &str) -> Result<usize, ApiError> {
    v.trim()
        .parse::<usize>()
        .map_err(|_| ApiError::parameter(name, format!("{name} must be a whole number ≥ 0, got {v:?}")))
}

/// A whole number ≥ 1.
pub(crate) fn positive(name: &str, v: &str) -> Result<usize, ApiError> {
    match v.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(ApiError::parameter(name, format!("{name} must be a whole number ≥ 1, got {v:?}"))),
    }
}

/// `limit`, `offset`, and the other accepted parameters by name.
pub(crate) type Paging = (usize, usize, Vec<(String, String)>);

/// `limit` and `offset` alone, for the seed endpoints' plain lists.
pub(crate) fn paging(raw: Option<&str>, default_limit: usize, extra_names: &[&str]) -> Result<Paging, ApiError> {
    let (mut limit, mut offset, mut extra) = (default_limit, 0, Vec::new());
    for (name, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match name.as_ref() {
            "limit" => limit = positive("limit", &value)?,
            "offset" => offset = number("offset", &value)?,
            other if extra_names.contains(&other) => extra.push((other.to_string(), value.to_string())),
            other => {
                let mut valid = vec!["limit", "offset"];
                valid.extend_from_slice(extra_names);
                return Err(ApiError::parameter(
                    other,
                    format!("unknown parameter {other:?}; valid parameters: {}", valid.join(", ")),
                ));
            }
        }
    }
    Ok((limit, offset, extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(raw: &str) -> String {
        let e = parse(Some(raw), Resource::Tasks, &[]).unwrap_err();
        e.extra["parameter"].as_str().unwrap().to_string()
    }

    #[test]
    fn reads_what_ray_list_sends() {
        let q = parse(
            Some("limit=50&timeout=30&detail=False&exclude_driver=True&server_timeout_multiplier=0.8&filter_keys=state&filter_predicates=%3D&filter_values=RUNNING&filter_keys=attempt_number&filter_predicates=!%3D&filter_values=0"),
            Resource::Tasks,
            &[],
        )
        .unwrap();
        assert_eq!((q.limit, q.detail, q.exclude_driver), (50, false, true));
        assert_eq!(q.filters.len(), 2);
        assert!(q.filters[0].matches(&Cell::Str("running".into())));
        assert!(!q.filters[1].matches(&Cell::Int(0)));
        assert!(q.filters[1].matches(&Cell::Int(1)));
    }

    #[test]
    fn bad_parameters_are_named() {
        assert_eq!(err("limit=0"), "limit");
        assert_eq!(err("limit=ten"), "limit");
        assert_eq!(err("offset=-1"), "offset");
        assert_eq!(err("detail=maybe"), "detail");
        assert_eq!(err("filter_keys=color&filter_values=red"), "filter_keys");
        assert_eq!(err("filter_keys=state&filter_predicates=~&filter_values=RUNNING"), "filter_predicates");
        assert_eq!(err("filter_keys=state"), "filter_values");
        assert_eq!(err("filter_keys=attempt_number&filter_values=one"), "filter_values");
        assert_eq!(err("stat=RUNNING"), "stat");
        assert_eq!(err("attempt_number=x"), "attempt_number");
        // Not filterable in Ray: start_time_ms.
        assert_eq!(err("start_time_ms=1"), "start_time_ms");
    }
}
