//! Who owns a namespace (the part of a verb name before the first `.`).
//!
//! A namespace belongs to one plugin, so a pattern like `allow = ["git.*"]`
//! means the plugin the operator thinks it means. The rule is first-come,
//! in load order:
//!
//! - the bundled namespaces (`job`, `git`, `cargo`, `just`, `rg`, `pytest`, `npm`, `vitest`,
//!   `jest`, `tsc`, `eslint`, `go`, `ruff`) belong to the
//!   bundled plugin of that name, always — even when that plugin failed to
//!   load, so no file can take its place;
//! - any other namespace belongs to the first plugin that declares a verb
//!   (or alias) in it that passes the load checks; components load bundled
//!   first, then plugin files in name order (in the server too: once one
//!   is compiled in the background, every later one joins after it);
//! - a verb or alias in a namespace another plugin owns is refused with
//!   `namespace_owned`, even when its exact name is free.

use std::collections::BTreeMap;

use super::fence::namespace;

/// Namespaces of the bundled plugins, each owned by the bundled plugin of
/// the same name (`job.` by the bundled core).
pub const BUNDLED_NAMESPACES: &[(&str, &str)] = &[
    ("job", "core"),
    ("git", "git"),
    ("cargo", "cargo"),
    ("just", "just"),
    ("rg", "rg"),
    ("pytest", "pytest"),
    ("npm", "npm"),
    ("vitest", "vitest"),
    ("jest", "jest"),
    ("tsc", "tsc"),
    ("eslint", "eslint"),
    ("go", "go"),
    ("ruff", "ruff"),
];

/// A namespace's owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The owning plugin's name.
    pub plugin: String,
    /// Whether it is the bundled plugin of that name (a file with the same
    /// plugin name is another plugin).
    pub bundled: bool,
}

impl Owner {
    /// How the owner is named in a refusal.
    pub fn describe(&self) -> String {
        if self.bundled {
            format!("the bundled `{}` plugin", self.plugin)
        } else {
            format!("plugin `{}`", self.plugin)
        }
    }
}

/// The namespace → owner map, seeded with the bundled namespaces.
#[derive(Debug, Clone)]
pub struct Namespaces {
    owners: BTreeMap<String, Owner>,
}

impl Default for Namespaces {
    fn default() -> Self {
        let owners = BUNDLED_NAMESPACES
            .iter()
            .map(|(ns, plugin)| {
                (ns.to_string(), Owner { plugin: plugin.to_string(), bundled: true })
            })
            .collect();
        Namespaces { owners }
    }
}

impl Namespaces {
    /// The owner of `name`'s namespace, if anyone owns it.
    pub fn owner_of(&self, name: &str) -> Option<&Owner> {
        self.owners.get(namespace(name))
    }

    /// Claim `name`'s namespace for `claimant`, or say who owns it.
    pub fn claim(&mut self, name: &str, claimant: &Owner) -> Result<(), Owner> {
        match self.owners.get(namespace(name)) {
            Some(owner) if owner != claimant => Err(owner.clone()),
            Some(_) => Ok(()),
            None => {
                self.owners.insert(namespace(name).to_string(), claimant.clone());
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(plugin: &str, bundled: bool) -> Owner {
        Owner { plugin: plugin.into(), bundled }
    }

    #[test]
    fn bundled_namespaces_are_owned_from_the_start_and_others_first_come() {
        let mut ns = Namespaces::default();
        assert_eq!(ns.claim("git.status", &owner("git", true)), Ok(()));
        // A file calling itself `git` is not the bundled git.
        assert_eq!(ns.claim("git.push", &owner("git", false)), Err(owner("git", true)));
        assert_eq!(ns.claim("git.push", &owner("squatter", false)), Err(owner("git", true)));
        assert_eq!(ns.claim("tool.a", &owner("first", false)), Ok(()));
        assert_eq!(ns.claim("tool.b", &owner("first", false)), Ok(()));
        assert_eq!(ns.claim("tool.c", &owner("second", false)), Err(owner("first", false)));
        assert_eq!(ns.owner_of("tool.zzz"), Some(&owner("first", false)));
        // A look-alike is another namespace.
        assert_eq!(ns.claim("tools.a", &owner("second", false)), Ok(()));
    }
}
