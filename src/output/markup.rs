//! One table markup for the reports, after hyperfine's `export/markup.rs`: a [`Table`] of
//! column heads and rows of [`Cell`]s, rendered as a GitHub-flavoured Markdown pipe table or
//! as an HTML `<table>`. A cell's class is its HTML class (`fail`, `ok`, `undecided`); a
//! `fail` cell is bold in Markdown, as the page's CSS makes it bold in HTML. Cell text is
//! plain: each renderer escapes what its format needs.

use super::html::esc;
use std::fmt::Write;

/// How a column's cells sit in Markdown (HTML leaves it to the page's CSS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One cell: its text and, for HTML, its class.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    text: String,
    class: Option<&'static str>,
}

impl Cell {
    /// A cell with an HTML class (`class=""` is written as given).
    pub fn classed(text: impl Into<String>, class: &'static str) -> Cell {
        Cell {
            text: text.into(),
            class: Some(class),
        }
    }
}

impl<T: Into<String>> From<T> for Cell {
    fn from(text: T) -> Cell {
        Cell {
            text: text.into(),
            class: None,
        }
    }
}

/// A table: column heads with their alignment, then rows.
#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table with these column heads, each left-aligned but where `Align::Right` is given.
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = (S, Align)>) -> Table {
        Table {
            columns: columns.into_iter().map(|(h, a)| (h.into(), a)).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row: one cell a column.
    pub fn row(&mut self, cells: impl IntoIterator<Item = Cell>) {
        self.rows.push(cells.into_iter().collect());
    }

    /// A pipe table; `|` in a cell is escaped.
    pub fn markdown(&self) -> String {
        let cell = |c: &Cell| {
            let t = c.text.replace('|', "\\|");
            match c.class {
                Some("fail") => format!("**{t}**"),
                _ => t,
            }
        };
        let mut o = String::new();
        let heads: Vec<String> = self
            .columns
            .iter()
            .map(|(h, _)| h.replace('|', "\\|"))
            .collect();
        let _ = writeln!(o, "| {} |", heads.join(" | "));
        let rule: Vec<&str> = self
            .columns
            .iter()
            .map(|(_, a)| match a {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(o, "|{}|", rule.join("|"));
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(cell).collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        }
        o
    }

    /// An HTML table, every head and cell escaped.
    pub fn html(&self) -> String {
        let mut o = String::from("<table><tr>");
        for (h, _) in &self.columns {
            let _ = write!(o, "<th>{}</th>", esc(h));
        }
        o.push_str("</tr>");
        for r in &self.rows {
            o.push_str("<tr>");
            for c in r {
                match c.class {
                    Some(class) => {
                        let _ = write!(o, "<td class=\"{class}\">{}</td>", esc(&c.text));
                    }
                    None => {
                        let _ = write!(o, "<td>{}</td>", esc(&c.text));
                    }
                }
            }
            o.push_str("</tr>");
        }
        o.push_str("</table>");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Table {
        let mut t = Table::new([("metric", Align::Left), ("delta", Align::Right)]);
        t.row(["ttft.p95".into(), Cell::classed("+37 % a|b", "fail")]);
        t.row(["tpot <p50>".into(), Cell::classed("-1 %", "ok")]);
        t
    }

    #[test]
    fn markdown_bolds_a_failing_cell_and_escapes_pipes() {
        assert_eq!(
            two().markdown(),
            "| metric | delta |\n|---|---:|\n| ttft.p95 | **+37 % a\\|b** |\n| tpot <p50> | -1 % |\n"
        );
    }

    #[test]
    fn html_keeps_classes_and_escapes_text() {
        assert_eq!(
            two().html(),
            "<table><tr><th>metric</th><th>delta</th></tr><tr><td>ttft.p95</td><td class=\"fail\">+37 % a|b</td></tr><tr><td>tpot &lt;p50&gt;</td><td class=\"ok\">-1 %</td></tr></table>"
        );
    }
}
