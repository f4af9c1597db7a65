//! Source files and positions.
//!
//! Every diagnostic points into a [`SourceFile`] by byte range; line and column are computed here, once,
//! so renderers (human, JSON, GitHub, SARIF) agree on the numbers.

use std::path::PathBuf;

/// Index of a file inside a [`SourceMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub usize);

/// One input file as read from disk (after template rendering, if any).
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Name shown to users: relative to the configuration directory when inside it.
    pub name: String,
    /// Path on disk.
    pub path: PathBuf,
    /// The text that was parsed.
    pub text: String,
    /// False for files outside the configuration directory (named by `--static`/`--dynamic`):
    /// their `name` is already the path as given, so renderers must not prefix the directory.
    pub in_dir: bool,
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// A file with its text.
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>, text: String) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self {
            name: name.into(),
            path: path.into(),
            text,
            in_dir: true,
            line_starts,
        }
    }

    /// Marks the file as living outside the configuration directory.
    pub fn outside_dir(mut self, outside: bool) -> Self {
        self.in_dir = !outside;
        self
    }

    /// 1-based line and column (in characters) of a byte offset; offsets past the end clamp to it.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts.get(line).copied().unwrap_or(0);
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// Byte offset of a 1-based line and column (in characters).
    pub fn offset_of(&self, line: usize, col: usize) -> usize {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let rest = self.text.get(start..).unwrap_or("");
        rest.char_indices()
            .nth(col.saturating_sub(1))
            .map_or(self.text.len(), |(i, _)| start + i)
    }

    /// The text of a 1-based line, without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return "";
        };
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        self.text
            .get(start..end)
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    }
}

/// All files of one run.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// Adds a file and returns its id.
    pub fn add(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        FileId(self.files.len() - 1)
    }

    /// Replaces the file with this id (after template rendering) and returns the same id.
    pub fn replace(&mut self, id: FileId, file: SourceFile) -> FileId {
        if let Some(slot) = self.files.get_mut(id.0) {
            *slot = file;
        }
        id
    }

    /// The file with this id.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0)
    }

    /// Every file, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i), f))
    }
}

/// A byte range inside one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// The file.
    pub file: FileId,
    /// Start byte offset.
    pub start: usize,
    /// End byte offset (exclusive).
    pub end: usize,
}

impl Span {
    /// A span covering `start..end` of `file`.
    pub fn new(file: FileId, start: usize, end: usize) -> Self {
        Self {
            file,
            start,
            end: end.max(start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_is_one_based_and_counts_characters() {
        let f = SourceFile::new("a.yml", "a.yml", "ab\ncé d\n".to_owned());
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        assert_eq!(f.line_col(7), (2, 4)); // 'é' is two bytes, one column
        assert_eq!(f.line_text(2), "cé d");
        assert_eq!(f.offset_of(2, 4), 7);
        assert_eq!(f.line_col(999), (3, 1));
    }
}
