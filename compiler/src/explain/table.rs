//! An aligned plain-text table for `explain`: one flexible column is cut with `…` so rows fit
//! in [`MAX_LINE`]; span rows carry free text under a row.

use super::{INDENT, MAX_LINE, clean};

/// Space between two table columns.
const GAP: usize = 2;
/// A truncatable column is never cut below this width.
const MIN_FLEX: usize = 24;

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub(super) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn width(text: &str) -> usize {
    text.chars().count()
}

/// An aligned plain-text table. One column may be marked flexible: it is cut (with `…`) so that
/// rows fit in [`MAX_LINE`]. A span row writes free text from a column onwards without taking
/// part in the alignment (used for the health-check sentence under a service).
pub(super) struct Table {
    headers: Vec<&'static str>,
    show_headers: bool,
    right: Vec<usize>,
    flex: Option<usize>,
    rows: Vec<Row>,
}

enum Row {
    Cells(Vec<String>),
    Span { column: usize, text: String },
}

impl Table {
    pub(super) fn new(headers: &[&'static str]) -> Table {
        Table {
            headers: headers.to_vec(),
            show_headers: true,
            right: Vec::new(),
            flex: None,
            rows: Vec::new(),
        }
    }

    pub(super) fn right(mut self, column: usize) -> Table {
        self.right.push(column);
        self
    }

    pub(super) fn flex(mut self, column: usize) -> Table {
        self.flex = Some(column);
        self
    }

    pub(super) fn headless(mut self) -> Table {
        self.show_headers = false;
        self
    }

    pub(super) fn row(&mut self, cells: Vec<String>) {
        self.rows
            .push(Row::Cells(cells.iter().map(|c| clean(c)).collect()));
    }

    pub(super) fn span(&mut self, column: usize, text: String) {
        self.rows.push(Row::Span {
            column,
            text: clean(&text),
        });
    }

    pub(super) fn render(&self, lines: &mut Vec<String>) {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = if self.show_headers {
            self.headers.iter().map(|h| width(h)).collect()
        } else {
            vec![0; columns]
        };
        for row in &self.rows {
            if let Row::Cells(cells) = row {
                for (w, cell) in widths.iter_mut().zip(cells) {
                    *w = (*w).max(width(cell));
                }
            }
        }
        if let Some(flex) = self.flex.filter(|&f| f < columns) {
            let total = INDENT + widths.iter().sum::<usize>() + GAP * columns.saturating_sub(1);
            if total > MAX_LINE {
                let floor = MIN_FLEX.max(width(self.headers[flex]));
                widths[flex] = widths[flex].saturating_sub(total - MAX_LINE).max(floor);
            }
        }
        let line = |cells: &[String]| -> String {
            let mut out = " ".repeat(INDENT);
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i > 0 {
                    out.push_str(&" ".repeat(GAP));
                }
                let cell = truncate(cell, *w);
                let pad = " ".repeat(w.saturating_sub(width(&cell)));
                if self.right.contains(&i) {
                    out.push_str(&pad);
                    out.push_str(&cell);
                } else {
                    out.push_str(&cell);
                    out.push_str(&pad);
                }
            }
            out.trim_end().to_owned()
        };
        if self.show_headers {
            let headers: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
            lines.push(line(&headers));
        }
        for row in &self.rows {
            match row {
                Row::Cells(cells) => lines.push(line(cells)),
                Row::Span { column, text } => {
                    let column = (*column).min(columns);
                    let offset = INDENT + widths[..column].iter().sum::<usize>() + GAP * column;
                    lines.push(format!("{}{text}", " ".repeat(offset)));
                }
            }
        }
    }
}
