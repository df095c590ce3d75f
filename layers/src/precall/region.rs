//! `allowed_model_region`: only deployments in the requested region serve.
//!
//! A deployment's `region` (`region_name`) matches when it equals the requested one (ASCII case
//! ignored), or when the request names an area (`eu`, `us`) and the region's name places it there,
//! as LiteLLM infers it from provider region names: `eu` takes names containing `europe`,
//! `sweden`, `switzerland`, `france`, `germany`, `italy`, `poland`, `spain`, `norway`, `uk`, or
//! starting with `eu-`; `us` takes names starting with `us` or ending with `us`, `us2`, `us3`
//! (`us-east-1`, `eastus2`, `centralus`). A deployment that declares no region is dropped when
//! the request asks for one: its data may be anywhere.

use crate::{BoxError, Candidates, Group, RouteError, RouteErrorKind};

const EU_NAMES: [&str; 10] =
    ["europe", "sweden", "switzerland", "france", "germany", "italy", "poland", "spain", "norway", "uk"];

/// Whether a deployment in `region` may serve a request restricted to `allowed`.
pub(crate) fn allowed(region: &str, allowed: &str) -> bool {
    if region.eq_ignore_ascii_case(allowed) {
        return true;
    }
    let region = region.to_ascii_lowercase();
    match allowed.to_ascii_lowercase().as_str() {
        "eu" => region.starts_with("eu-") || EU_NAMES.iter().any(|n| region.contains(n)),
        "us" => {
            region.starts_with("us")
                || ["us", "us2", "us3"].iter().any(|s| region.ends_with(s) && !region.ends_with("aus"))
        }
        _ => false,
    }
}

/// Drops the deployments outside `region`.
pub(crate) fn filter(list: &mut Candidates, region: &str) {
    list.retain(|d| d.region.as_deref().is_some_and(|r| allowed(r, region)));
}

/// No deployment is in the region.
pub(crate) fn none_in(group: &Group, region: &str) -> BoxError {
    RouteError::new(
        RouteErrorKind::NoCandidates,
        format!("no deployment of `{}` is in the allowed model region `{region}`", group.name()),
    )
    .with_group(group.name().clone())
    .into()
}

#[cfg(test)]
mod tests {
    use super::allowed;

    #[test]
    fn areas_take_provider_region_names() {
        assert!(allowed("EU", "eu"));
        for r in ["westeurope", "swedencentral", "eu-central-1", "europe-west4", "francecentral"] {
            assert!(allowed(r, "eu"), "{r}");
            assert!(!allowed(r, "us"), "{r}");
        }
        for r in ["eastus", "eastus2", "us-east-1", "us-central1", "southcentralus"] {
            assert!(allowed(r, "us"), "{r}");
            assert!(!allowed(r, "eu"), "{r}");
        }
        assert!(!allowed("australiaeast", "us"));
        assert!(!allowed("westeurope", "northeurope"));
    }
}
