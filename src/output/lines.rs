//! Text fitted to a width: a line cut at a word with `…`, and a comparison's notes in a line
//! each (the default view's, the Markdown's and the HTML page's short form).

/// The notes, a line each in at most `width` characters; notes of one kind (the text
/// before their first `: `, as `environment`) share a line that counts them.
pub fn note_lines(notes: &[String], width: usize) -> Vec<String> {
    let kind = |n: &str| n.split_once(": ").map(|(k, _)| k.to_string());
    let mut lines: Vec<(Option<String>, Vec<&String>)> = Vec::new();
    for n in notes {
        let k = kind(n);
        match lines.iter_mut().find(|(l, _)| k.is_some() && *l == k) {
            Some((_, group)) => group.push(n),
            None => lines.push((k, vec![n])),
        }
    }
    lines
        .into_iter()
        .map(|(k, group)| match (k, group.len()) {
            (Some(k), n) if n > 1 => {
                let first = group[0].split_once(": ").map_or("", |(_, rest)| rest);
                note_line(&format!("{k} ({n} notes): {first}"), width)
            }
            _ => note_line(group[0], width),
        })
        .collect()
}

/// A note in at most `width` characters: its lead (the text before ` — `) when that fits,
/// else its start shortened, with where the rest is.
pub fn note_line(note: &str, width: usize) -> String {
    let more = " (--explain)";
    match note.find(" — ").map(|i| &note[..i]) {
        Some(lead) if lead.chars().count() + more.len() <= width => format!("{lead}{more}"),
        _ if note.chars().count() <= width => note.to_string(),
        _ => format!("{}{more}", shorten(note, width - more.len())),
    }
}

/// `s` in at most `width` characters, cut at a word with `…` when longer.
pub fn shorten(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let cut: String = s.chars().take(width - 1).collect();
    let at = cut
        .rfind(' ')
        .filter(|i| *i > width / 2)
        .unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end())
}
