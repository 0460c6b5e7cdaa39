//! Rows of cells as aligned text columns, for the bench's terminal tables
//! (the record's and the gate's).

use std::fmt::Write;

/// Rows of cells as aligned text lines: the first column left-aligned, the
/// others right-aligned, two spaces apart.
pub fn aligned(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(&widths).enumerate() {
            let pad = " ".repeat(width - cell.chars().count());
            if index == 0 {
                let _ = write!(line, "{cell}{pad}");
            } else {
                let _ = write!(line, "  {pad}{cell}");
            }
        }
        let _ = writeln!(text, "{}", line.trim_end());
    }
    text
}
