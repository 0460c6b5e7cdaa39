//! Shell words, for tests that check the crashsim commands written in
//! other files (CI scripts, the README and docs/).

/// The words of one command line: quotes removed, no escapes or
/// expansions (callers substitute variables first).
pub fn words(command: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (Some(open), c) if c == open => quote = None,
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => word.push(c),
        }
    }
    assert!(quote.is_none(), "unbalanced quotes in {command:?}");
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

/// `line` without a trailing comment: from a `#` that starts a word
/// outside quotes.
pub fn strip_comment(line: &str) -> &str {
    let (mut quote, mut previous) = (None, ' ');
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(open), c) if c == open => quote = None,
            (None, '#') if previous.is_whitespace() => return line[..at].trim_end(),
            _ => {}
        }
        previous = c;
    }
    line
}
