//! Key and channel names. Every key starts with `{namespace}:v{SCHEMA}:`; everything one script
//! touches shares one hash tag (`{d:<deployment id>}`), so it lives in one Redis Cluster slot.

use crate::DeploymentId;

/// The key and script schema version. A change that old replicas cannot read bumps it, which gives
/// the new version its own keyspace: during a rolling upgrade each version shares state with its
/// own kind only, and nothing is misread.
pub(crate) const SCHEMA: u32 = 1;

/// Builds the names for one namespace.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
    channel: String,
}

/// The keys of one deployment.
#[cfg(test)]
pub(crate) struct DeploymentKeys {
    pub(crate) cooldown: String,
    pub(crate) revision: String,
    pub(crate) usage_ticks: String,
    pub(crate) usage_counts: String,
    pub(crate) outcome_ticks: String,
    pub(crate) outcome_counts: String,
}

impl Keys {
    pub(crate) fn new(prefix: String) -> Self {
        let channel = format!("{prefix}:cooldowns");
        Self { prefix, channel }
    }

    /// The pub/sub channel of cooldown changes.
    pub(crate) fn channel(&self) -> &str {
        &self.channel
    }

    /// A deployment's cooldown record and its revision counter.
    pub(crate) fn cooldown(&self, id: &DeploymentId) -> [String; 2] {
        [format!("{}:{{d:{id}}}:cooldown", self.prefix), format!("{}:{{d:{id}}}:rev", self.prefix)]
    }

    pub(crate) fn usage(&self, id: &DeploymentId) -> [String; 2] {
        [format!("{}:{{d:{id}}}:usage:t", self.prefix), format!("{}:{{d:{id}}}:usage:c", self.prefix)]
    }

    pub(crate) fn outcomes(&self, id: &DeploymentId) -> [String; 2] {
        [format!("{}:{{d:{id}}}:outcomes:t", self.prefix), format!("{}:{{d:{id}}}:outcomes:c", self.prefix)]
    }

    /// A deployment's health-probe record and its probe lease.
    pub(crate) fn health(&self, id: &DeploymentId) -> [String; 2] {
        [format!("{}:{{d:{id}}}:health", self.prefix), format!("{}:{{d:{id}}}:health:lease", self.prefix)]
    }

    /// An adaptive pre-router's evidence, one hash for all its cells (one slot).
    pub(crate) fn bandit(&self, router: &str) -> String {
        format!("{}:{{b:{router}}}:bandit", self.prefix)
    }

    /// A budget's spend (the pre-call layer's `provider_spend:...` / `deployment_spend:...`).
    pub(crate) fn spend(&self, key: &str) -> String {
        format!("{}:{{s:{key}}}:spend", self.prefix)
    }

    /// An affinity entry (the pre-call layer's `session:...` / `key:...`).
    pub(crate) fn affinity(&self, key: &str) -> String {
        format!("{}:{{a:{key}}}:affinity", self.prefix)
    }

    #[cfg(test)]
    pub(crate) fn deployment(&self, id: &DeploymentId) -> DeploymentKeys {
        let [usage_ticks, usage_counts] = self.usage(id);
        let [outcome_ticks, outcome_counts] = self.outcomes(id);
        let [cooldown, revision] = self.cooldown(id);
        DeploymentKeys { cooldown, revision, usage_ticks, usage_counts, outcome_ticks, outcome_counts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slot-relevant part of a key: the first `{...}` with something inside (Redis's rule).
    fn hash_tag(key: &str) -> &str {
        let open = key.find('{').unwrap();
        let close = open + key[open..].find('}').unwrap();
        &key[open + 1..close]
    }

    #[test]
    fn a_deployments_keys_share_one_slot() {
        let keys = Keys::new("switchyard:v1".into());
        let k = keys.deployment(&DeploymentId::from("azure-eu"));
        let tags: Vec<&str> =
            [&k.cooldown, &k.revision, &k.usage_ticks, &k.usage_counts, &k.outcome_ticks, &k.outcome_counts]
                .iter()
                .map(|k| hash_tag(k))
                .collect();
        assert!(tags.iter().all(|t| *t == "d:azure-eu"), "{tags:?}");
        assert_eq!(k.cooldown, "switchyard:v1:{d:azure-eu}:cooldown");
    }
}
