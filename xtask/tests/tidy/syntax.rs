//! Library code as `syn` reads it, for the checks a line scan can be fooled in: a
//! `use std::{fs, process}` tree names `std::fs` without the text `std::fs`, a call split over
//! lines (`Command\n    ::new`) is one path, and a word in a string or a comment is no use of
//! it. Macro bodies are token streams to syn; their paths, macros and method calls are read from
//! the tokens, so `format!("{}", x.unwrap())` is still seen.

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// What library code names, with the 1-based line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Named {
    /// A path, `::`-joined, each `use` tree expanded to whole paths (`std::fs`, `Command::new`).
    Path(String),
    /// A macro called, with its `!` (`println!`).
    Macro(String),
    /// A method called (`unwrap`).
    Method(String),
}

impl Named {
    /// Whether this is a path holding `word`'s segments in a row (`Command::new` is in
    /// `std::process::Command::new`, `std::fs` in `std::fs::read`), a macro named `word`, or a
    /// method call `.word(`.
    pub(crate) fn is(&self, word: &str) -> bool {
        match self {
            Named::Path(path) => {
                let (path, word) = (format!("::{path}::"), format!("::{word}::"));
                path.contains(&word)
            }
            Named::Macro(name) => name == word,
            Named::Method(name) => format!(".{name}(") == word,
        }
    }
}

/// Everything the library code of `text` names, test items (`#[cfg(test)]`) left out.
pub(crate) fn library_names(text: &str) -> syn::Result<Vec<(usize, Named)>> {
    let file = syn::parse_file(text)?;
    let mut names = Names::default();
    names.visit_file(&file);
    Ok(names.found)
}

#[derive(Default)]
struct Names {
    found: Vec<(usize, Named)>,
}

/// Whether `attrs` hold a `cfg` whose condition names `test` (`#[cfg(test)]`,
/// `#[cfg(all(test, unix))]`).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    fn names_test(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            TokenTree::Ident(i) => i == "test",
            TokenTree::Group(g) => names_test(g.stream()),
            _ => false,
        })
    }
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .meta
                .require_list()
                .is_ok_and(|list| names_test(list.tokens.clone()))
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item;
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn path_text(path: &syn::Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    segments.join("::")
}

/// The whole paths a `use` tree names: `std::{fs, process::Command}` is `std::fs` and
/// `std::process::Command`.
fn use_paths(prefix: &str, tree: &syn::UseTree, out: &mut Vec<(usize, String)>) {
    let join = |name: &str| match prefix {
        "" => name.to_owned(),
        _ => format!("{prefix}::{name}"),
    };
    match tree {
        syn::UseTree::Path(p) => use_paths(&join(&p.ident.to_string()), &p.tree, out),
        syn::UseTree::Name(n) if n.ident == "self" => {
            out.push((n.ident.span().start().line, prefix.to_owned()));
        }
        syn::UseTree::Name(n) => {
            out.push((n.ident.span().start().line, join(&n.ident.to_string())))
        }
        syn::UseTree::Rename(r) => {
            out.push((r.ident.span().start().line, join(&r.ident.to_string())))
        }
        syn::UseTree::Glob(g) => out.push((g.star_token.spans[0].start().line, prefix.to_owned())),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_paths(prefix, t, out)),
    }
}

impl Names {
    /// Paths, macros and method calls in a macro's tokens, nested groups included.
    fn tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(group) => self.tokens(group.stream()),
                TokenTree::Punct(p) if p.as_char() == '.' => {
                    if let (Some(TokenTree::Ident(name)), Some(TokenTree::Group(_))) =
                        (tokens.get(i + 1), tokens.get(i + 2))
                    {
                        self.found
                            .push((name.span().start().line, Named::Method(name.to_string())));
                        i += 2;
                        continue;
                    }
                }
                TokenTree::Ident(first) => {
                    let line = first.span().start().line;
                    let mut path = first.to_string();
                    let mut next = i + 1;
                    // `a :: b :: c`: a `::` is two `:` puncts, the first joint.
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(segment)),
                    ) = (tokens.get(next), tokens.get(next + 1), tokens.get(next + 2))
                    {
                        if a.as_char() != ':' || a.spacing() != Spacing::Joint || b.as_char() != ':'
                        {
                            break;
                        }
                        path = format!("{path}::{segment}");
                        next += 3;
                    }
                    match tokens.get(next) {
                        Some(TokenTree::Punct(bang)) if bang.as_char() == '!' => {
                            self.found.push((line, Named::Macro(format!("{path}!"))));
                            next += 1;
                        }
                        _ => self.found.push((line, Named::Path(path))),
                    }
                    i = next;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test(item_attrs(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test(&item.attrs) {
            visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        let attrs = match stmt {
            syn::Stmt::Local(local) => &local.attrs[..],
            syn::Stmt::Macro(m) => &m.attrs[..],
            _ => &[],
        };
        if !is_test(attrs) {
            visit::visit_stmt(self, stmt);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths("", &item.tree, &mut paths);
        let paths = paths.into_iter().map(|(line, p)| (line, Named::Path(p)));
        self.found.extend(paths);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(first) = path.segments.first() {
            let line = first.ident.span().start().line;
            self.found.push((line, Named::Path(path_text(path))));
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if let Some(first) = mac.path.segments.first() {
            let line = first.ident.span().start().line;
            let name = format!("{}!", path_text(&mac.path));
            self.found.push((line, Named::Macro(name)));
        }
        self.tokens(mac.tokens.clone());
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let line = call.method.span().start().line;
        let name = call.method.to_string();
        self.found.push((line, Named::Method(name)));
        visit::visit_expr_method_call(self, call);
    }
}

/// The syntax scan sees what a line scan misses, and nothing in strings, comments or tests.
#[test]
fn the_syntax_scan_reads_use_trees_split_paths_and_macro_bodies() {
    let text = r#"
use std::{fs, process::{self, Command as Cmd}};
fn a() {
    let c = std::process::Command
        ::new("x");
    let s = "std::net and x.unwrap()"; // tokio::spawn
    tracing::warn!("{}", b.expect("no"));
}
#[cfg(all(test, unix))]
mod tests {
    fn t() { std::io::stdout(); x.unwrap(); }
}
"#;
    let names = library_names(text).unwrap();
    let found = |word: &str| -> Vec<usize> {
        names
            .iter()
            .filter(|(_, named)| named.is(word))
            .map(|(line, _)| *line)
            .collect()
    };
    assert_eq!(found("std::fs"), [2]);
    assert_eq!(found("std::process"), [2, 2, 4]);
    assert_eq!(found("Command::new"), [4]);
    assert_eq!(found("tracing::warn!"), [7]);
    assert_eq!(found(".expect("), [7]);
    assert!(found("std::net").is_empty());
    assert!(found("tokio").is_empty());
    assert!(found(".unwrap(").is_empty());
    assert!(found("io::stdout").is_empty());
}

/// What the top-level public items of `text` make public, with their lines: each `pub use`
/// tree's whole paths (a glob as `path::*`, a rename by its original path) and each `pub mod`'s
/// name, test items left out.
pub(crate) fn public_items(text: &str) -> syn::Result<Vec<(usize, Public)>> {
    fn paths(prefix: &str, tree: &syn::UseTree, out: &mut Vec<(usize, Public)>) {
        let join = |name: &syn::Ident| match prefix {
            "" => name.to_string(),
            _ => format!("{prefix}::{name}"),
        };
        let line = |ident: &syn::Ident| ident.span().start().line;
        match tree {
            syn::UseTree::Path(p) => paths(&join(&p.ident), &p.tree, out),
            syn::UseTree::Name(n) => out.push((line(&n.ident), Public::Use(join(&n.ident)))),
            syn::UseTree::Rename(r) => out.push((line(&r.ident), Public::Use(join(&r.ident)))),
            syn::UseTree::Glob(g) => out.push((
                g.star_token.spans[0].start().line,
                Public::Use(format!("{prefix}::*")),
            )),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| paths(prefix, t, out)),
        }
    }
    let file = syn::parse_file(text)?;
    let mut found = Vec::new();
    for item in &file.items {
        match item {
            syn::Item::Use(u)
                if matches!(u.vis, syn::Visibility::Public(_)) && !is_test(&u.attrs) =>
            {
                paths("", &u.tree, &mut found);
            }
            syn::Item::Mod(m)
                if matches!(m.vis, syn::Visibility::Public(_)) && !is_test(&m.attrs) =>
            {
                found.push((
                    m.ident.span().start().line,
                    Public::Mod(m.ident.to_string()),
                ));
            }
            _ => {}
        }
    }
    Ok(found)
}

/// One thing a file's top level makes public.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Public {
    /// A path a `pub use` re-exports (`ralph_agents::Usage`, `ralph_events::session::*`).
    Use(String),
    /// A `pub mod`'s name.
    Mod(String),
}
