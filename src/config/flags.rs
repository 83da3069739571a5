//! [`Flags`]: a command's run flags (`--endpoint`, `--var`, `--opt`, `--param`, the load and
//! output flags) as the library holds them. A command that runs several configurations of one
//! scenario — a stack's, an interleave's control arm — builds one [`super::run::RunSpec`] per
//! configuration from them; what it may change is a method here, so code above `config` never
//! sees the command line's parser.

use super::kv;
use crate::cli::RunOpts;

/// The run flags, as given.
#[derive(Debug, Clone)]
pub struct Flags(pub(super) RunOpts);

impl From<&RunOpts> for Flags {
    fn from(o: &RunOpts) -> Flags {
        Flags(o.clone())
    }
}

impl Flags {
    /// Every run flag at its default: a run as its scenario file says.
    pub fn defaults() -> Flags {
        Flags(RunOpts::defaults())
    }

    /// These `--opt KEY=VALUE` added after the given ones (the later of two equal keys wins).
    pub fn with_opts(mut self, opts: impl IntoIterator<Item = String>) -> Flags {
        self.0.opts.extend(opts);
        self
    }

    /// `--opt KEY` set to `value` (a simulator option), or removed with `None`.
    pub fn set_opt(&mut self, key: &str, value: Option<&str>) {
        set(&mut self.0.opts, key, value);
    }

    /// `--var KEY` set to `value`, or removed with `None`.
    pub fn set_var(&mut self, key: &str, value: Option<&str>) {
        set(&mut self.0.vars, key, value);
    }

    /// `--param KEY` set to `value`, or removed with `None`.
    pub fn set_param(&mut self, key: &str, value: Option<&str>) {
        set(&mut self.0.params, key, value);
    }

    /// `--endpoint`.
    pub fn set_endpoint(&mut self, url: &str) {
        self.0.endpoint = Some(url.to_string());
    }

    /// Whether `--opt` or `--endpoint` was given: flags that would configure a run, where a
    /// command judges stored runs only.
    pub fn configures_a_run(&self) -> bool {
        !self.0.opts.is_empty() || self.0.endpoint.is_some()
    }
}

/// Replaces (or removes, with `None`) `key` among `KEY=VALUE` items.
fn set(items: &mut Vec<String>, key: &str, value: Option<&str>) {
    items.retain(|i| kv::pair("", i).map_or(true, |(k, _)| k != key));
    if let Some(v) = value {
        items.push(format!("{key}={v}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_replaced_or_removed() {
        let mut v = vec!["a=1".to_string(), "b=2".to_string()];
        set(&mut v, "a", Some("9"));
        set(&mut v, "b", None);
        assert_eq!(v, ["a=9"]);
    }
}
