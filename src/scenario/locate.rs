//! Finds where a key is written in TOML text, for error messages about
//! values that parsed but did not validate (the parser's spans are gone by
//! then). A line-based search is enough for the flat, hand-written files
//! scenarios are; when it finds nothing, the error simply has no line.

/// 1-based (line, column) of a byte offset.
pub fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |tail| tail.chars().count()) + 1;
    (line, column)
}

/// 1-based (line, column) of the line that sets `key`, a dotted path such as
/// `workload.writers_count` or `script[2].kill`.
pub fn key(text: &str, key: &str) -> Option<(usize, usize)> {
    let segments: Vec<(String, Option<usize>)> = key
        .split('.')
        .filter(|segment| !segment.is_empty())
        .map(|segment| match segment.split_once('[') {
            Some((name, index)) => (name.to_string(), index.trim_end_matches(']').parse().ok()),
            None => (segment.to_string(), None),
        })
        .collect();
    let (leaf, parents) = segments.split_last()?;
    let wanted_table: Vec<&str> = parents.iter().map(|(name, _)| name.as_str()).collect();
    let wanted_index = parents.last().and_then(|(_, index)| *index);

    let mut table: Vec<String> = Vec::new();
    let mut array_counts: std::collections::BTreeMap<String, usize> = Default::default();
    let mut array_index: Option<usize> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(header) = trimmed.strip_prefix("[[").and_then(|rest| rest.split("]]").next()) {
            let name = header.trim().to_string();
            let count = array_counts.entry(name.clone()).or_insert(0);
            array_index = Some(*count);
            *count += 1;
            table = name.split('.').map(|part| part.trim().to_string()).collect();
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[').and_then(|rest| rest.split(']').next()) {
            table = header.split('.').map(|part| part.trim().to_string()).collect();
            array_index = None;
            continue;
        }
        let Some((name, _)) = trimmed.split_once('=') else {
            continue;
        };
        let mut full: Vec<String> = table.clone();
        full.extend(name.split('.').map(|part| part.trim().trim_matches('"').to_string()));
        let Some((last, prefix)) = full.split_last() else {
            continue;
        };
        if last == &leaf.0 && prefix.iter().map(String::as_str).eq(wanted_table.iter().copied()) {
            if wanted_index.is_some() && wanted_index != array_index {
                continue;
            }
            let column = line.len() - line.trim_start().len() + 1;
            return Some((number + 1, column));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_keys_in_tables_dotted_keys_and_arrays() {
        let text = "a = 1\n[workload]\n  writers_count = 0\n[faults]\nwriter.before_commit = \"1/2\"\n[[script]]\nkill = \"x\"\n[[script]]\nkill = \"y\"\n";
        assert_eq!(key(text, "a"), Some((1, 1)));
        assert_eq!(key(text, "workload.writers_count"), Some((3, 3)));
        assert_eq!(key(text, "faults.writer.before_commit"), Some((5, 1)));
        assert_eq!(key(text, "script[1].kill"), Some((9, 1)));
        assert_eq!(key(text, "script[0].kill"), Some((7, 1)));
        assert_eq!(key(text, "workload.trips_count"), None);
        assert_eq!(position("ab\ncd", 4), (2, 2));
    }
}
