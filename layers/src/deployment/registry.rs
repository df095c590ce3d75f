use std::{collections::HashMap, fmt, sync::Arc};

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use super::{
    Candidates, Deployment, DeploymentId,
    candidates::Declared,
    pattern::{Pattern, inferred_provider, substitute},
};
use crate::RouteError;

/// Which deployment field simple-shuffle uses as the weight, decided once for a whole group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WeightBasis {
    /// Some deployment of the group sets `weight`.
    Weight,
    /// No `weight`, but some deployment sets `rpm`.
    Rpm,
    /// No `weight` or `rpm`, but some deployment sets `tpm`.
    Tpm,
    /// Nothing set: every deployment is equally likely.
    Uniform,
}

impl WeightBasis {
    /// Decided over the deployments that can serve: a blocked one never does, so its fields do
    /// not change how the others share the traffic.
    fn of(deployments: &[Arc<Deployment>]) -> Self {
        let serving = || deployments.iter().filter(|d| !d.blocked);
        if serving().any(|d| d.weight.is_some()) {
            Self::Weight
        } else if serving().any(|d| d.rpm.is_some()) {
            Self::Rpm
        } else if serving().any(|d| d.tpm.is_some()) {
            Self::Tpm
        } else {
            Self::Uniform
        }
    }

    /// The weight of `d` under this basis; a deployment that does not set the field weighs 0.
    pub fn weight(self, d: &Deployment) -> f64 {
        match self {
            Self::Weight => d.weight.unwrap_or(0.0),
            Self::Rpm => d.rpm.unwrap_or(0) as f64,
            Self::Tpm => d.tpm.unwrap_or(0) as f64,
            Self::Uniform => 1.0,
        }
    }
}

/// A model group: the deployments that serve one public name, in config order.
#[derive(Debug)]
pub struct Group {
    name: Arc<str>,
    deployments: Arc<[Arc<Deployment>]>,
    /// The deployments that can serve (not blocked): every call starts from this one list.
    serving: Arc<[Arc<Deployment>]>,
    /// What `serving` declares, read once.
    declared: Declared,
    weight_basis: WeightBasis,
}

impl Group {
    fn new(name: Arc<str>, deployments: Arc<[Arc<Deployment>]>) -> Self {
        let weight_basis = WeightBasis::of(&deployments);
        let serving = if deployments.iter().any(|d| d.blocked) {
            deployments.iter().filter(|d| !d.blocked).cloned().collect()
        } else {
            deployments.clone()
        };
        let declared = Declared::of(&serving);
        Self { name, deployments, serving, declared, weight_basis }
    }

    /// The group's name (for a wildcard match, the pattern, e.g. `openai/*`).
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// Every deployment of the group, blocked ones included.
    pub fn deployments(&self) -> &[Arc<Deployment>] {
        &self.deployments
    }

    /// The weight field simple-shuffle uses for this group.
    pub fn weight_basis(&self) -> WeightBasis {
        self.weight_basis
    }

    /// The deployments that may serve a first attempt: all but the blocked ones, shared with the
    /// group until a layer removes one (no per-call copy).
    pub fn candidates(&self) -> Candidates {
        Candidates::shared_declared(self.serving.clone(), self.declared)
    }
}

/// What a requested name resolved to.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Resolved {
    /// The group that serves the request.
    pub group: Arc<Group>,
    /// The alias the caller used, when it was one.
    pub alias: Option<Arc<str>>,
    /// The caller named one deployment by its id.
    pub by_id: bool,
}

#[derive(Clone, Debug)]
struct Alias {
    target: Arc<str>,
    hidden: bool,
}

#[derive(Default)]
struct Snapshot {
    /// Insertion (config) order.
    deployments: Vec<Arc<Deployment>>,
    groups: HashMap<Arc<str>, Arc<Group>>,
    by_id: HashMap<DeploymentId, Arc<Deployment>>,
    aliases: HashMap<Arc<str>, Alias>,
    /// Wildcard groups, most specific first.
    patterns: Vec<(Pattern, Arc<Group>)>,
    /// The deployments of each provider model (`litellm_params.model`, wildcard models aside),
    /// as a group: a request may name a deployment by its provider model.
    by_model: HashMap<Arc<str>, Arc<Group>>,
}

impl Snapshot {
    fn build(deployments: Vec<Arc<Deployment>>, aliases: HashMap<Arc<str>, Alias>) -> Self {
        let mut by_group: HashMap<Arc<str>, Vec<Arc<Deployment>>> = HashMap::new();
        let mut order: Vec<Arc<str>> = Vec::new();
        let mut by_id = HashMap::with_capacity(deployments.len());
        for d in &deployments {
            by_id.insert(d.id.clone(), d.clone());
            by_group
                .entry(d.group.clone())
                .or_insert_with(|| {
                    order.push(d.group.clone());
                    Vec::new()
                })
                .push(d.clone());
        }
        let mut groups = HashMap::with_capacity(by_group.len());
        let mut patterns = Vec::new();
        for name in order {
            let members = by_group.remove(&name).unwrap_or_default();
            let group = Arc::new(Group::new(name.clone(), members.into()));
            if name.contains('*') {
                patterns.push((Pattern::new(&name), group.clone()));
            }
            groups.insert(name, group);
        }
        // Stable: equally specific patterns keep config order.
        patterns.sort_by_key(|p| std::cmp::Reverse(p.0.specificity()));
        let by_model = by_provider_model(&deployments);
        Self { deployments, groups, by_id, aliases, patterns, by_model }
    }

    /// The first wildcard group matching `name`, its deployments' models substituted.
    fn pattern_match(&self, name: &str) -> Option<Arc<Group>> {
        self.patterns.iter().find_map(|(pattern, group)| {
            let caps = pattern.captures(name)?;
            let deployments: Vec<Arc<Deployment>> = group
                .deployments()
                .iter()
                .map(|d| {
                    let mut d = Deployment::clone(d);
                    d.model = substitute(&d.model, &caps, name).into();
                    Arc::new(d)
                })
                .collect();
            Some(Arc::new(Group::new(group.name().clone(), deployments.into())))
        })
    }

    fn known_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .groups
            .keys()
            .map(|g| g.to_string())
            // An alias whose group has lost its last deployment does not resolve: not listed.
            .chain(
                self.aliases
                    .iter()
                    .filter(|(_, a)| !a.hidden && self.groups.contains_key(&a.target))
                    .map(|(k, _)| k.to_string()),
            )
            .collect();
        names.sort();
        names
    }
}

/// A runtime change the registry refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// [`Registry::add`] was given an id that is already registered.
    DuplicateId(DeploymentId),
    /// An alias points at a group (or pattern) that does not exist.
    UnknownAliasTarget {
        /// The alias.
        alias: String,
        /// The missing target.
        target: String,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateId(id) => write!(f, "deployment id `{id}` is already registered"),
            Self::UnknownAliasTarget { alias, target } => {
                write!(f, "alias `{alias}` points at `{target}`, which is not a model group")
            }
        }
    }
}

impl std::error::Error for RegistryError {}

/// The deployments of each provider model, as groups: named after the deployments' group when
/// they share one, else after the provider model.
fn by_provider_model(deployments: &[Arc<Deployment>]) -> HashMap<Arc<str>, Arc<Group>> {
    let mut by_model: HashMap<Arc<str>, Vec<Arc<Deployment>>> = HashMap::new();
    for d in deployments.iter().filter(|d| !d.model.contains('*')) {
        by_model.entry(d.model.clone()).or_default().push(d.clone());
    }
    by_model
        .into_iter()
        .map(|(model, list)| {
            let name = match list.split_first() {
                Some((first, rest)) if rest.iter().all(|d| d.group == first.group) => first.group.clone(),
                _ => model.clone(),
            };
            (model, Arc::new(Group::new(name, list.into())))
        })
        .collect()
}

/// Model groups, aliases and wildcard patterns, resolvable in O(1) and changeable at runtime.
///
/// Reads are lock-free (an atomically swapped snapshot); a change builds a new snapshot and
/// swaps it in, so requests in flight keep the deployments they resolved and are never blocked.
///
/// Resolution order for a requested name: alias, group, deployment id, wildcard patterns (most
/// specific first; the name, then `{provider}/{name}`), then a deployment's provider model
/// ([`Registry::resolve`]). Anything else is
/// [`RouteErrorKind::UnknownGroup`](crate::RouteErrorKind) listing the names that are known.
pub struct Registry {
    current: ArcSwap<Snapshot>,
    writer: Mutex<()>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snap = self.current.load();
        f.debug_struct("Registry")
            .field("deployments", &snap.deployments.len())
            .field("groups", &snap.groups.len())
            .field("aliases", &snap.aliases.len())
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self { current: ArcSwap::from_pointee(Snapshot::default()), writer: Mutex::new(()) }
    }

    /// A registry holding `deployments`, in order. Fails on a duplicate id.
    pub fn with_deployments(deployments: impl IntoIterator<Item = Deployment>) -> Result<Self, RegistryError> {
        let registry = Self::new();
        for d in deployments {
            registry.add(d)?;
        }
        Ok(registry)
    }

    fn update<T>(
        &self,
        f: impl FnOnce(&mut Vec<Arc<Deployment>>, &mut HashMap<Arc<str>, Alias>) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        let _guard = self.writer.lock();
        let current = self.current.load_full();
        let mut deployments = current.deployments.clone();
        let mut aliases = current.aliases.clone();
        let out = f(&mut deployments, &mut aliases)?;
        self.current.store(Arc::new(Snapshot::build(deployments, aliases)));
        Ok(out)
    }

    /// Adds a deployment; fails if its id is already registered.
    pub fn add(&self, deployment: Deployment) -> Result<(), RegistryError> {
        self.update(|list, _| {
            if list.iter().any(|d| d.id == deployment.id) {
                return Err(RegistryError::DuplicateId(deployment.id.clone()));
            }
            list.push(Arc::new(deployment));
            Ok(())
        })
    }

    /// Adds a deployment, or replaces the one with the same id in place (keeping its position).
    pub fn upsert(&self, deployment: Deployment) -> Result<(), RegistryError> {
        self.update(|list, _| {
            match list.iter_mut().find(|d| d.id == deployment.id) {
                Some(slot) => *slot = Arc::new(deployment),
                None => list.push(Arc::new(deployment)),
            }
            Ok(())
        })
    }

    /// Removes a deployment; returns it if it was registered. Requests that already resolved it
    /// finish with it.
    pub fn remove(&self, id: &DeploymentId) -> Option<Arc<Deployment>> {
        self.update(|list, _| {
            let at = list.iter().position(|d| &d.id == id);
            Ok(at.map(|i| list.remove(i)))
        })
        .ok()
        .flatten()
    }

    /// Replaces every deployment and alias at once (a config reload): one snapshot swap, so a
    /// request resolves against either the old set or the new one, never a mix, and requests in
    /// flight keep what they resolved. Fails, changing nothing, on a duplicate id or an alias
    /// whose target is not a group of the new set.
    ///
    /// ```
    /// use switchyard_layers::{Deployment, Registry};
    /// let registry = Registry::new();
    /// registry.add(Deployment::builder("old", "openai/a").build()?)?;
    /// registry.replace([Deployment::builder("new", "openai/b").build()?], [("fast", "new", false)])?;
    /// assert!(registry.resolve("old").is_err());
    /// assert_eq!(&**registry.resolve("fast")?.group.name(), "new");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replace<D, A, S, T>(&self, deployments: D, aliases: A) -> Result<(), RegistryError>
    where
        D: IntoIterator<Item = Deployment>,
        A: IntoIterator<Item = (S, T, bool)>,
        S: Into<Arc<str>>,
        T: Into<Arc<str>>,
    {
        let mut list: Vec<Arc<Deployment>> = Vec::new();
        for d in deployments {
            if list.iter().any(|o| o.id == d.id) {
                return Err(RegistryError::DuplicateId(d.id));
            }
            list.push(Arc::new(d));
        }
        let mut map = HashMap::new();
        for (alias, target, hidden) in aliases {
            let (alias, target): (Arc<str>, Arc<str>) = (alias.into(), target.into());
            if !list.iter().any(|d| d.group == target) {
                return Err(RegistryError::UnknownAliasTarget { alias: alias.to_string(), target: target.to_string() });
            }
            map.insert(alias, Alias { target, hidden });
        }
        let _guard = self.writer.lock();
        self.current.store(Arc::new(Snapshot::build(list, map)));
        Ok(())
    }

    /// Every alias: (alias, target group, hidden), sorted by alias.
    pub fn aliases(&self) -> Vec<(String, String, bool)> {
        let snap = self.current.load();
        let mut all: Vec<_> =
            snap.aliases.iter().map(|(k, a)| (k.to_string(), a.target.to_string(), a.hidden)).collect();
        all.sort();
        all
    }

    /// Makes `alias` another name for `target` (`model_group_alias`). A hidden alias resolves but
    /// is not listed by [`Registry::names`].
    pub fn set_alias(
        &self,
        alias: impl Into<Arc<str>>,
        target: impl Into<Arc<str>>,
        hidden: bool,
    ) -> Result<(), RegistryError> {
        let (alias, target) = (alias.into(), target.into());
        self.update(|list, aliases| {
            if !list.iter().any(|d| d.group == target) {
                return Err(RegistryError::UnknownAliasTarget { alias: alias.to_string(), target: target.to_string() });
            }
            aliases.insert(alias, Alias { target, hidden });
            Ok(())
        })
    }

    /// Removes an alias; returns whether it existed.
    pub fn remove_alias(&self, alias: &str) -> bool {
        self.update(|_, aliases| Ok(aliases.remove(alias).is_some())).unwrap_or(false)
    }

    /// Resolves a requested name to the group that serves it.
    ///
    /// In order: an alias (to its group), a group, a deployment id, a wildcard pattern (the name
    /// as asked, then `{provider}/{name}` when the catalog knows the name's provider, so `gpt-4o`
    /// reaches an `openai/*` group, as LiteLLM's pattern router does), and last the deployments
    /// whose provider model (`litellm_params.model`) is the name.
    pub fn resolve(&self, requested: &str) -> Result<Resolved, RouteError> {
        let snap = self.current.load();
        let (name, alias) = match snap.aliases.get(requested) {
            Some(a) => (&*a.target, Some(Arc::<str>::from(requested))),
            None => (requested, None),
        };
        if let Some(group) = snap.groups.get(name)
            && !name.contains('*')
        {
            return Ok(Resolved { group: group.clone(), alias, by_id: false });
        }
        if let Some(d) = snap.by_id.get(name) {
            let group = Group::new(d.group.clone(), Arc::from(vec![d.clone()]));
            return Ok(Resolved { group: Arc::new(group), alias, by_id: true });
        }
        let prefixed = || {
            if snap.patterns.is_empty() {
                return None;
            }
            let provider = inferred_provider(name)?;
            snap.pattern_match(&format!("{provider}/{name}"))
        };
        if let Some(group) = snap.pattern_match(name).or_else(prefixed) {
            return Ok(Resolved { group, alias, by_id: false });
        }
        if let Some(group) = snap.by_model.get(name) {
            return Ok(Resolved { group: group.clone(), alias, by_id: false });
        }
        Err(RouteError::unknown_group(requested, snap.known_names()))
    }

    /// Resolves a request sent with LiteLLM's `specific_deployment: true`: only the deployments
    /// whose provider model (`litellm_params.model`) is `model` serve it. None is
    /// [`RouteErrorKind::UnknownGroup`](crate::RouteErrorKind) listing the names that are known.
    ///
    /// ```
    /// use switchyard_layers::{Deployment, Registry};
    /// let registry = Registry::with_deployments([
    ///     Deployment::builder("gpt-4o", "azure/gpt-4o-eu").build()?,
    ///     Deployment::builder("gpt-4o", "openai/gpt-4o").build()?,
    /// ])?;
    /// let resolved = registry.resolve_specific("azure/gpt-4o-eu")?;
    /// assert_eq!(resolved.group.deployments().len(), 1);
    /// assert!(registry.resolve_specific("gpt-4o").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolve_specific(&self, model: &str) -> Result<Resolved, RouteError> {
        let snap = self.current.load();
        match snap.by_model.get(model) {
            Some(group) => Ok(Resolved { group: group.clone(), alias: None, by_id: false }),
            None => Err(RouteError::unknown_group(model, snap.known_names())),
        }
    }

    /// The group registered under exactly `name` (no alias or pattern resolution).
    pub fn group(&self, name: &str) -> Option<Arc<Group>> {
        self.current.load().groups.get(name).cloned()
    }

    /// The deployment with this id.
    pub fn deployment(&self, id: &DeploymentId) -> Option<Arc<Deployment>> {
        self.current.load().by_id.get(id).cloned()
    }

    /// Every deployment, in registration order.
    pub fn deployments(&self) -> Vec<Arc<Deployment>> {
        self.current.load().deployments.clone()
    }

    /// The names a caller may ask for: groups, patterns and visible aliases, sorted.
    pub fn names(&self) -> Vec<String> {
        self.current.load().known_names()
    }

    /// Whether `name` resolves (as a group, alias, deployment id or pattern match).
    pub fn knows(&self, name: &str) -> bool {
        self.resolve(name).is_ok()
    }
}
