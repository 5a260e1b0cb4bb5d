//! The words plugs bring to a RALPH.md: a task source's (or any plug's) placeholder namespace,
//! the `RUN_ENDED` reasons it gives, the state names it reserves and its own top-level section.
//!
//! The parser knows ralph's own words (`commands`, `args`, `ralph`, the engine's endings, the
//! built-in states) and nothing of any plug's: [`parse_with`](crate::parse_with) checks a file
//! against a [`Vocabulary`], the plugs registered for the run.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::schema::{self, BUILT_IN_END_REASONS};
use crate::{RalphFile, VALUE_NAMESPACES};

/// The placeholder namespaces ralph itself fills in the prompt: `commands`, `args`, `ralph`.
/// No plug may take one, nor `state` (a state hook's, see [`VALUE_NAMESPACES`]).
pub const BUILT_IN_NAMESPACES: &[&str] = &["commands", "args", "ralph"];

/// The names a placeholder namespace has.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Names {
    /// Exactly these; any other name is a warning with the list.
    Closed(Vec<String>),
    /// Any name: the plug decides at run time (a source filling `{{ env.* }}`, say).
    Open,
}

/// One placeholder namespace a plug fills in: `{{ story.title }}`, `{{ task.item }}`.
#[derive(Clone)]
pub struct Namespace {
    name: String,
    names: Names,
    filled_only_if: Option<FilledOnlyIf>,
}

/// The files a namespace is filled in, and the warning for its placeholders in the others.
#[derive(Clone)]
struct FilledOnlyIf {
    filled: fn(&RalphFile) -> bool,
    otherwise: String,
}

impl Namespace {
    /// The namespace `name` with exactly `names`.
    pub fn closed<I, S>(name: impl Into<String>, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            name: name.into(),
            names: Names::Closed(names.into_iter().map(Into::into).collect()),
            filled_only_if: None,
        }
    }

    /// The namespace `name`, taking any name.
    pub fn open(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            names: Names::Open,
            filled_only_if: None,
        }
    }

    /// The namespace is filled only in files for which `filled` holds (story placeholders
    /// only with `escalation.prd`); in any other file each of its placeholders is a warning
    /// saying `otherwise`.
    #[must_use]
    pub fn filled_only_if(
        mut self,
        filled: fn(&RalphFile) -> bool,
        otherwise: impl Into<String>,
    ) -> Self {
        self.filled_only_if = Some(FilledOnlyIf {
            filled,
            otherwise: otherwise.into(),
        });
        self
    }

    /// The namespace's name, before the dot.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its names.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// Why `file` leaves this namespace's placeholders as written, if it does.
    pub(crate) fn unfilled_in(&self, file: &RalphFile) -> Option<&str> {
        let only_if = self.filled_only_if.as_ref()?;
        (!(only_if.filled)(file)).then_some(only_if.otherwise.as_str())
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Namespace")
            .field("name", &self.name)
            .field("names", &self.names)
            .field(
                "filled_only_if",
                &self
                    .filled_only_if
                    .as_ref()
                    .map(|only_if| &only_if.otherwise),
            )
            .finish()
    }
}

/// A problem a plug found in its section, located by the parser like its own errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionProblem {
    /// The field inside the section, in [`error_at`](crate::error_at)'s syntax (`path`,
    /// `items[2].name`); empty for the section itself.
    pub field: String,
    /// What was found and what is allowed.
    pub message: String,
    /// Locate the problem at the field's key rather than its value.
    pub at_key: bool,
}

impl SectionProblem {
    /// A problem with the value of `field` (empty: the whole section).
    pub fn at_value(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            at_key: false,
        }
    }

    /// A problem with the key of `field`: an unknown or misplaced key.
    pub fn at_key(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            at_key: true,
        }
    }
}

/// A plug's check of its section's value (as JSON: the YAML as written, converted): every
/// problem it finds.
pub type SectionCheck = Arc<dyn Fn(&Value) -> Vec<SectionProblem> + Send + Sync>;

/// One plug's words: what it adds to the RALPH.md format.
///
/// ```
/// use ralph_frontmatter::{Namespace, PlugVocabulary, SectionProblem, Vocabulary};
///
/// let checklist = PlugVocabulary::new("checklist")
///     .namespace(Namespace::closed("task", ["item"]))
///     .end_reasons(["checklist_done"])
///     .section("checklist", |value| match value.get("file") {
///         Some(file) if file.is_string() => Vec::new(),
///         _ => vec![SectionProblem::at_value("", "expected `file: PATH`")],
///     });
/// let vocabulary = Vocabulary::default().with(checklist).unwrap();
/// let text = "---\nagent: x\nchecklist:\n  file: TODO.md\n---\nDo {{ task.item }}.\n";
/// let parsed = ralph_frontmatter::parse_with("RALPH.md", text, &vocabulary).unwrap();
/// assert!(parsed.warnings.is_empty());
/// assert_eq!(parsed.file.sections["checklist"]["file"].as_str(), Some("TODO.md"));
/// ```
#[derive(Clone)]
pub struct PlugVocabulary {
    plug: String,
    namespaces: Vec<Namespace>,
    end_reasons: Vec<String>,
    reserved_states: Vec<String>,
    sections: Vec<(String, SectionCheck)>,
    outputs: Vec<String>,
}

impl PlugVocabulary {
    /// The words of the plug `plug` (its name in messages); none yet.
    pub fn new(plug: impl Into<String>) -> Self {
        Self {
            plug: plug.into(),
            namespaces: Vec::new(),
            end_reasons: Vec::new(),
            reserved_states: Vec::new(),
            sections: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// Output formats the plug reads (`output: acme-json`): names of adapters the embedder
    /// registers with the engine. A file naming one has it in
    /// [`Config::output_adapter`](crate::Config::output_adapter).
    #[must_use]
    pub fn outputs<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.outputs.extend(names.into_iter().map(Into::into));
        self
    }

    /// A placeholder namespace the plug fills in.
    #[must_use]
    pub fn namespace(mut self, namespace: Namespace) -> Self {
        self.namespaces.push(namespace);
        self
    }

    /// `RUN_ENDED` reasons the plug gives: no declared state may take one, or its stop would
    /// read as the plug's ending.
    #[must_use]
    pub fn end_reasons<I, S>(mut self, reasons: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.end_reasons.extend(reasons.into_iter().map(Into::into));
        self
    }

    /// State (marker) names the plug gives a meaning to: no declared state may take one.
    #[must_use]
    pub fn reserved_states<I, S>(mut self, states: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.reserved_states
            .extend(states.into_iter().map(Into::into));
        self
    }

    /// A top-level key of the frontmatter that is the plug's: its value is handed to `check`
    /// as written, as JSON (`serde_json::Value`), each problem `check` returns becomes a located error, and a valid
    /// file keeps the value in [`RalphFile::sections`] for the plug to read.
    #[must_use]
    pub fn section(
        mut self,
        key: impl Into<String>,
        check: impl Fn(&Value) -> Vec<SectionProblem> + Send + Sync + 'static,
    ) -> Self {
        self.sections.push((key.into(), Arc::new(check)));
        self
    }

    /// The plug's name.
    pub fn plug(&self) -> &str {
        &self.plug
    }
}

impl fmt::Debug for PlugVocabulary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sections: Vec<&str> = self.sections.iter().map(|(key, _)| key.as_str()).collect();
        f.debug_struct("PlugVocabulary")
            .field("plug", &self.plug)
            .field("namespaces", &self.namespaces)
            .field("end_reasons", &self.end_reasons)
            .field("reserved_states", &self.reserved_states)
            .field("sections", &sections)
            .field("outputs", &self.outputs)
            .finish()
    }
}

/// A word two plugs, or a plug and ralph, both claim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VocabularyError {
    /// A placeholder namespace taken already.
    #[error("plug `{plug}`: placeholder namespace `{namespace}` is {owner}'s already")]
    Namespace {
        /// The plug registered last.
        plug: String,
        /// The namespace.
        namespace: String,
        /// `ralph` or the plug that has it.
        owner: String,
    },
    /// A top-level key taken already.
    #[error("plug `{plug}`: frontmatter key `{key}` is {owner}'s already")]
    Section {
        /// The plug registered last.
        plug: String,
        /// The key.
        key: String,
        /// `ralph` or the plug that has it.
        owner: String,
    },
    /// An output format taken already.
    #[error("plug `{plug}`: output format `{name}` is {owner}'s already")]
    Output {
        /// The plug registered last.
        plug: String,
        /// The format's name.
        name: String,
        /// `ralph` or the plug that has it.
        owner: String,
    },
    /// A `RUN_ENDED` reason or state name taken already.
    #[error("plug `{plug}`: `{name}` is {owner}'s ending or state already")]
    Name {
        /// The plug registered last.
        plug: String,
        /// The reason or state name.
        name: String,
        /// `ralph` or the plug that has it.
        owner: String,
    },
}

/// The plugs registered for a run, whose words a RALPH.md may use. The default has none: a
/// plain file, ralph's own words only.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    plugs: Vec<PlugVocabulary>,
}

impl Vocabulary {
    /// This vocabulary with `plug`'s words too; an error if any is ralph's or another plug's.
    pub fn with(mut self, plug: PlugVocabulary) -> Result<Self, VocabularyError> {
        self.register(plug)?;
        Ok(self)
    }

    /// Adds `plug`'s words; an error, and nothing added, if any is ralph's or another plug's.
    pub fn register(&mut self, plug: PlugVocabulary) -> Result<(), VocabularyError> {
        let name = || plug.plug.clone();
        for namespace in &plug.namespaces {
            if let Some(owner) = self.namespace_owner(&namespace.name) {
                return Err(VocabularyError::Namespace {
                    plug: name(),
                    namespace: namespace.name.clone(),
                    owner,
                });
            }
        }
        for (key, _) in &plug.sections {
            let owner = if schema::names(schema::FIELDS).contains(&key.as_str())
                || schema::IGNORED_RALPHIFY_KEYS.contains(&key.as_str())
            {
                Some("ralph".to_owned())
            } else {
                self.section_owner(key)
            };
            if let Some(owner) = owner {
                return Err(VocabularyError::Section {
                    plug: name(),
                    key: key.clone(),
                    owner,
                });
            }
        }
        for word in plug.end_reasons.iter().chain(&plug.reserved_states) {
            if let Some(owner) = self.name_owner(word) {
                return Err(VocabularyError::Name {
                    plug: name(),
                    name: word.clone(),
                    owner,
                });
            }
        }
        for output in &plug.outputs {
            let owner = match schema::OUTPUT_FORMATS.contains(&output.as_str()) {
                true => Some("ralph".to_owned()),
                false => self
                    .plugs
                    .iter()
                    .find(|p| p.outputs.contains(output))
                    .map(|p| p.plug.clone()),
            };
            if let Some(owner) = owner {
                return Err(VocabularyError::Output {
                    plug: name(),
                    name: output.clone(),
                    owner,
                });
            }
        }
        self.plugs.push(plug);
        Ok(())
    }

    /// Every `output:` a file may name: ralph's formats, then the plugs'.
    pub fn output_names(&self) -> Vec<&str> {
        let plugs = self
            .plugs
            .iter()
            .flat_map(|p| &p.outputs)
            .map(String::as_str);
        schema::OUTPUT_FORMATS
            .iter()
            .copied()
            .chain(plugs)
            .collect()
    }

    /// The plugs registered, in order.
    pub fn plugs(&self) -> &[PlugVocabulary] {
        &self.plugs
    }

    fn namespace_owner(&self, namespace: &str) -> Option<String> {
        // `state` is filled in a state's hook command (`{{ state.pr }}`), quoted as a value.
        if BUILT_IN_NAMESPACES.contains(&namespace) || VALUE_NAMESPACES.contains(&namespace) {
            return Some("ralph".to_owned());
        }
        self.plugs
            .iter()
            .find(|p| p.namespaces.iter().any(|n| n.name == namespace))
            .map(|p| p.plug.clone())
    }

    fn section_owner(&self, key: &str) -> Option<String> {
        self.plugs
            .iter()
            .find(|p| p.sections.iter().any(|(k, _)| k == key))
            .map(|p| p.plug.clone())
    }

    fn name_owner(&self, word: &str) -> Option<String> {
        if schema::RESERVED_STATE_NAMES.contains(&word) {
            return Some("ralph".to_owned());
        }
        self.plugs
            .iter()
            .find(|p| {
                p.end_reasons
                    .iter()
                    .chain(&p.reserved_states)
                    .any(|w| w == word)
            })
            .map(|p| p.plug.clone())
    }

    /// Every placeholder namespace: ralph's, then each plug's in registration order.
    pub fn namespace_names(&self) -> Vec<&str> {
        let plugs = self.namespaces().map(|n| n.name.as_str());
        BUILT_IN_NAMESPACES.iter().copied().chain(plugs).collect()
    }

    /// The plugs' namespaces.
    pub(crate) fn namespaces(&self) -> impl Iterator<Item = &Namespace> {
        self.plugs.iter().flat_map(|p| &p.namespaces)
    }

    /// Every `RUN_ENDED` reason no state may take: the engine's, then the plugs'.
    pub fn end_reasons(&self) -> Vec<&str> {
        let plugs = self
            .plugs
            .iter()
            .flat_map(|p| &p.end_reasons)
            .map(String::as_str);
        BUILT_IN_END_REASONS.iter().copied().chain(plugs).collect()
    }

    /// The plug that reserves the state `name`, if one does.
    pub(crate) fn reserving_plug(&self, name: &str) -> Option<&str> {
        self.plugs
            .iter()
            .find(|p| p.reserved_states.iter().any(|s| s == name))
            .map(|p| p.plug.as_str())
    }

    /// Every name `states` cannot declare: [`schema::RESERVED_STATE_NAMES`], then the plugs'
    /// endings and reserved states (for `cargo xtask schema`).
    pub fn reserved_state_names(&self) -> Vec<&str> {
        let plugs = self
            .plugs
            .iter()
            .flat_map(|p| p.end_reasons.iter().chain(&p.reserved_states))
            .map(String::as_str);
        schema::RESERVED_STATE_NAMES
            .iter()
            .copied()
            .chain(plugs)
            .collect()
    }

    /// The plugs' top-level keys.
    pub fn section_keys(&self) -> Vec<&str> {
        self.plugs
            .iter()
            .flat_map(|p| &p.sections)
            .map(|(key, _)| key.as_str())
            .collect()
    }

    /// The check of the section `key`.
    pub(crate) fn section_check(&self, key: &str) -> Option<&SectionCheck> {
        self.plugs
            .iter()
            .flat_map(|p| &p.sections)
            .find(|(k, _)| k == key)
            .map(|(_, check)| check)
    }
}
