//! Pagination that ends: no page read twice, no more than [`MAX_PAGES`], and never a page on
//! another host (which would carry the token away).

use std::collections::HashSet;

/// The most pages one listing reads: 1,000 pages of 100 open issues (or comments) is more than
/// a task list holds; past it the pages are taken as endless.
const MAX_PAGES: usize = 1000;

/// Why a listing stops following its next pages. Matched whole by each forge's client, so
/// that a new way to stop is one each must word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageStop {
    /// The pages do not end: `why` says how.
    Endless {
        /// Pages read.
        pages: usize,
        /// The link repeats one already read, or the page cap.
        why: String,
    },
    /// The next page is outside the API's address.
    Foreign {
        /// The link the forge gave.
        next: String,
    },
}

/// The pages of one listing read so far.
#[derive(Debug)]
pub struct Pages {
    base: String,
    read: HashSet<String>,
}

impl Pages {
    /// A listing at the API address `base`.
    #[must_use]
    pub fn new(base: &str) -> Self {
        Self {
            base: base.to_owned(),
            read: HashSet::new(),
        }
    }

    /// After page `url` is read: the page to read next, `None` at the end.
    ///
    /// # Errors
    /// [`PageStop`] when `next` was read already, is past the 1,000th page or is on another host.
    pub fn follow(&mut self, url: &str, next: Option<String>) -> Result<Option<String>, PageStop> {
        self.read.insert(url.to_owned());
        let pages = self.read.len();
        match next {
            None => Ok(None),
            Some(next) if self.read.contains(&next) => Err(PageStop::Endless {
                pages,
                why: format!("the next page, {next}, was read already"),
            }),
            Some(_) if pages >= MAX_PAGES => Err(PageStop::Endless {
                pages,
                why: format!("more than {MAX_PAGES} pages"),
            }),
            Some(next) if next.starts_with(&format!("{}/", self.base)) => Ok(Some(next)),
            Some(next) => Err(PageStop::Foreign { next }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_followed_on_the_host_until_one_repeats() {
        let mut pages = Pages::new("http://h/api");
        assert_eq!(
            pages.follow(
                "http://h/api/a?page=1",
                Some("http://h/api/a?page=2".into())
            ),
            Ok(Some("http://h/api/a?page=2".into()))
        );
        assert!(matches!(
            pages.follow(
                "http://h/api/a?page=2",
                Some("http://h/api/a?page=1".into())
            ),
            Err(PageStop::Endless { pages: 2, .. })
        ));
        assert_eq!(
            pages.follow("http://h/api/a?page=3", Some("http://evil/api/a".into())),
            Err(PageStop::Foreign {
                next: "http://evil/api/a".into()
            })
        );
        assert_eq!(pages.follow("http://h/api/a?page=4", None), Ok(None));
    }
}
